#include "autotune/launcher.h"

#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>
#include <utility>

#include "autotune/hostfile.h"
#include "autotune/tune_error.h"
#include "base/subprocess.h"

namespace hybrid::autotune {

std::string default_launcher_template(int nprocs, bool hostfile) {
  if (nprocs <= 1 && !hostfile) return "{cmd}";
  std::string mpirun = "mpirun";
#ifdef HYBRID_MPIEXEC
  if (::access(HYBRID_MPIEXEC, X_OK) == 0) mpirun = HYBRID_MPIEXEC;
#endif
  return mpirun + (hostfile ? " --hostfile {hostfile}" : "") + " -np {nprocs} {cmd}";
}

std::string resolve_launcher(const std::string& tmpl, int nprocs, const std::string& hostfile) {
  std::string out = tmpl.empty() ? default_launcher_template(nprocs, !hostfile.empty()) : tmpl;
  const std::string placeholder = "{hostfile}";
  if (hostfile.empty()) {
    if (out.find(placeholder) != std::string::npos)
      throw TuneError(
          fmt::format("launcher: \"{}\" uses {{hostfile}}, but no --hostfile was given", out));
    return out;
  }
  const auto hosts = read_hostfile(hostfile);
  if (total_slots(hosts) < nprocs)
    throw TuneError(fmt::format("hostfile {}: {} slot(s) on {} host(s), but --nprocs is {}",
                                hostfile, total_slots(hosts), hosts.size(), nprocs));
  if (!tmpl.empty() && tmpl.find(placeholder) == std::string::npos)
    throw TuneError(
        fmt::format("launcher: \"{}\" does not use {{hostfile}}, so --hostfile {} would be ignored",
                    tmpl, hostfile));
  const std::string path = std::filesystem::absolute(hostfile).string();
  for (size_t at; (at = out.find(placeholder)) != std::string::npos;)
    out.replace(at, placeholder.size(), "'" + path + "'");
  return out;
}

namespace {

struct Word {
  std::string text;
  bool quoted = false;  // some of it was in quotes: '{cmd}' is one word for a shell
};

std::vector<Word> split_quoted(const std::string& text) {
  std::vector<Word> words;
  Word cur;
  bool in_word = false;
  char quote = 0;
  for (char ch : text) {
    if (quote) {
      if (ch == quote)
        quote = 0;
      else
        cur.text += ch;
    } else if (ch == '\'' || ch == '"') {
      quote = ch;
      in_word = cur.quoted = true;
    } else if (ch == ' ' || ch == '\t' || ch == '\n') {
      if (in_word) words.push_back(cur), cur = {}, in_word = false;
    } else {
      cur.text += ch;
      in_word = true;
    }
  }
  if (quote) throw TuneError(fmt::format("launcher: unterminated {} quote in \"{}\"", quote, text));
  if (in_word) words.push_back(cur);
  return words;
}

}  // namespace

std::vector<std::string> split_words(const std::string& text) {
  std::vector<std::string> words;
  for (auto& w : split_quoted(text)) words.push_back(std::move(w.text));
  return words;
}

std::vector<std::string> expand_launcher(const std::string& tmpl,
                                         const std::vector<std::string>& cmd,
                                         const std::map<std::string, std::string>& vars) {
  std::vector<std::string> out;
  bool placed = false;
  for (const auto& [w, quoted] : split_quoted(tmpl)) {
    if (w == "{cmd}" && !quoted) {
      out.insert(out.end(), cmd.begin(), cmd.end());
      placed = true;
      continue;
    }
    std::string s;
    for (size_t i = 0; i < w.size();) {
      if (w[i] == '{') {
        const size_t close = w.find('}', i);
        if (close == std::string::npos) {
          s += w.substr(i);
          break;
        }
        const std::string name = w.substr(i + 1, close - i - 1);
        if (name == "cmd") {  // inside a word: for a shell, e.g. sbatch --wrap "srun {cmd}"
          s += base::shell_join(cmd);
          placed = true;
          i = close + 1;
          continue;
        }
        const auto it = vars.find(name);
        if (it == vars.end()) {
          std::string known = "cmd";
          for (const auto& [k, v] : vars) known += ", " + k;
          throw TuneError(fmt::format("launcher: unknown placeholder {{{}}} in \"{}\" (known: {})",
                                      name, tmpl, known));
        }
        s += it->second;
        i = close + 1;
      } else {
        s += w[i++];
      }
    }
    out.push_back(s);
  }
  if (!placed) out.insert(out.end(), cmd.begin(), cmd.end());
  if (out.empty()) throw TuneError("launcher: the template is empty");
  return out;
}

}  // namespace hybrid::autotune
