#include "autotune/process.h"

#include "base/subprocess.h"

namespace hybrid::autotune {

ProcessResult run_process(const std::vector<std::string>& argv, const ProcessOptions& opts) {
  base::SubprocessOptions o;
  if (!opts.log_path.empty()) o.stdout_file = opts.log_path;
  o.stderr_to_stdout = true;
  o.append = true;       // the caller removes an earlier attempt's log when it must go
  o.own_session = true;  // a timeout or cancel must reach mpirun's ranks too
  o.timeout_s = opts.timeout_s;
  o.kill_grace_s = opts.kill_grace_s;
  o.cancel = opts.cancel;
  const base::SubprocessResult r = base::run_subprocess(argv, o);

  ProcessResult res;
  res.wall_s = r.wall_s;
  res.cancelled = r.cancelled;
  res.exit.started = r.started;
  res.exit.start_error = r.start_error;
  res.exit.exit_code = r.exited ? r.exit_code : 0;  // ExitInfo: meaningful when signal == 0
  res.exit.signal = r.signal;
  res.exit.timed_out = r.timed_out;
  res.exit.timeout_s = opts.timeout_s;
  return res;
}

}  // namespace hybrid::autotune
