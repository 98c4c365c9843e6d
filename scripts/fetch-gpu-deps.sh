#!/usr/bin/env bash
# Downloads (never installs) the Debian packages that the GPU machine may lack
# into the git-ignored .deps/ folder, for scripts/gpu-check.sh to unpack there
# with `dpkg -x` (that machine has no package registry and no internet).
#
# The list is explicit: the -dev packages of the build's dependencies and the
# runtime libraries they link against beyond a base system (glibc, libstdc++,
# libgomp come with the compiler). Run here, on a Debian 12 machine with apt.
#   scripts/fetch-gpu-deps.sh [--update]    (--update: apt-get update first)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
deps="$root/.deps"

packages=(
  # headers, static libs and CMake/pkg-config files
  libsqlite3-dev nlohmann-json3-dev libgtest-dev libgmock-dev libbenchmark-dev
  libcli11-dev libfmt-dev libopenmpi-dev libdnnl-dev libopenblas-dev
  libopenblas-pthread-dev zlib1g-dev
  pkg-config pkgconf pkgconf-bin libpkgconf3
  # runtime libraries of the above
  libsqlite3-0 libbenchmark1debian libfmt9 libdnnl2 ocl-icd-libopencl1
  libopenblas0-pthread libgfortran5 libquadmath0 zlib1g
  # Open MPI: library, its wrapper compilers (mpicxx -showme for FindMPI), data files, deps
  libopenmpi3 openmpi-bin openmpi-common libhwloc15 libevent-core-2.1-7
  libevent-pthreads-2.1-7 libpmix2 libudev1 libnuma1 libltdl7
)

if [[ "${1:-}" == "--update" ]]; then apt-get update -qq; fi
mkdir -p "$deps"
cd "$deps"
# Only what is not here yet (same package, any version: the newest candidate wins).
missing=()
for p in "${packages[@]}"; do
  compgen -G "${p}_*.deb" >/dev/null || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "fetch-gpu-deps: downloading ${#missing[@]} packages into .deps/"
  apt-get download "${missing[@]}"
fi
# A manifest the GPU script prints: name version.
tmp="$(mktemp manifest.XXXXXX)"
for f in *.deb; do dpkg-deb -f "$f" Package Version | paste -sd' '; done | sort >"$tmp"
mv "$tmp" manifest.txt
echo "fetch-gpu-deps: $(wc -l <manifest.txt) packages in .deps/ ($(du -sh . | cut -f1))"
