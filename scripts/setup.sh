#!/usr/bin/env bash
# Installs every Debian package hybrid needs to build, test, benchmark and view.
# Idempotent: when everything is present it only checks (about a second).
set -euo pipefail

packages=(
  cmake ninja-build g++ pkg-config git ccache
  libimgui-dev libglfw3-dev libstb-dev libegl-dev libgl1-mesa-dri xvfb xauth
  libopenmpi-dev openmpi-bin
  zlib1g-dev libsqlite3-dev sqlite3 nlohmann-json3-dev libbenchmark-dev libgtest-dev libgmock-dev
  libcli11-dev libfmt-dev libdnnl-dev libopenblas-dev liburing-dev
  # Tokenizers: PCRE2 for byte-level BPE's Unicode split pattern, SentencePiece for .model files;
  # the fortune cookies (English and German) are the real text the examples and tests train on.
  libpcre2-dev libsentencepiece-dev fortunes fortunes-de
  clang-format clang-tidy python3
  clang libclang-rt-dev llvm
  iproute2 util-linux
  slurmctld slurmd slurm-client munge
  # srun --mpi=pmix: Slurm's plugin loads libpmix from it at run time (no package dependency).
  libpmix2
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo_cmd apt-get update -qq
  $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
echo "setup: all ${#packages[@]} packages present"
