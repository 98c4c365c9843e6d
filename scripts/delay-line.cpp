// A delay line between a test host and the bridge, for kernels without tc
// netem (scripts/testcluster.sh up N --delay TIME compiles and starts one per
// host). It makes two TAP devices in the current network namespace, HOST_TAP
// (which the script then moves into the host's namespace as its eth0) and
// BRIDGE_TAP (which the script puts on the bridge), and forwards Ethernet
// frames between them: the host's outgoing frames after DELAY_US microseconds,
// as netem on its eth0 would delay them, incoming ones at once. Order is kept;
// a frame that finds the line full (more than a second of frames at any rate
// a test uses) is dropped, as a full queue would drop it. A write that fails
// (the bridge side set down: `testcluster.sh cut`) drops the frame: a cut link.
//
//   delay-line HOST_TAP BRIDGE_TAP DELAY_US MTU
//
// Prints "ready" once both devices exist; runs until killed. Needs /dev/net/tun
// and CAP_NET_ADMIN.
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <poll.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <vector>

namespace {

[[noreturn]] void die(const char* what, const char* name) {
  std::fprintf(stderr, "delay-line: %s %s: %s\n", what, name, std::strerror(errno));
  std::exit(1);
}

int open_tap(const char* name) {
  const int fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) die("cannot open /dev/net/tun for", name);
  ifreq req{};
  req.ifr_flags = IFF_TAP | IFF_NO_PI;
  std::snprintf(req.ifr_name, IFNAMSIZ, "%s", name);
  if (ioctl(fd, TUNSETIFF, &req) < 0) die("cannot create the TAP device", name);
  return fd;
}

int64_t now_ns() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return int64_t(t.tv_sec) * 1000000000 + t.tv_nsec;
}

// Frames in flight, oldest first: a ring of fixed slots (no allocation per frame).
class Line {
 public:
  Line(size_t slots, size_t slot_bytes)
      : bytes_(slots * slot_bytes), due_(slots), len_(slots), slot_bytes_(slot_bytes) {}
  bool full() const { return count_ == due_.size(); }
  bool empty() const { return count_ == 0; }
  uint8_t* tail() { return &bytes_[((head_ + count_) % due_.size()) * slot_bytes_]; }
  void push(int64_t due, size_t len) {
    const size_t i = (head_ + count_) % due_.size();
    due_[i] = due, len_[i] = len, ++count_;
  }
  int64_t head_due() const { return due_[head_]; }
  const uint8_t* head(size_t* len) const {
    *len = len_[head_];
    return &bytes_[head_ * slot_bytes_];
  }
  void pop() { head_ = (head_ + 1) % due_.size(), --count_; }

 private:
  std::vector<uint8_t> bytes_;
  std::vector<int64_t> due_;
  std::vector<size_t> len_;
  size_t slot_bytes_ = 0, head_ = 0, count_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: delay-line HOST_TAP BRIDGE_TAP DELAY_US MTU\n");
    return 2;
  }
  const int64_t delay_ns = std::atoll(argv[3]) * 1000;
  const size_t frame_max = size_t(std::atoi(argv[4])) + 64;  // Ethernet header and VLAN tag
  if (delay_ns <= 0 || frame_max <= 64) {
    std::fprintf(stderr, "delay-line: DELAY_US and MTU must be positive\n");
    return 2;
  }
  prctl(PR_SET_TIMERSLACK, 1UL);  // wake at the frame's due time, not 50 us later
  // Run before the ranks whose traffic this carries when they share the cores:
  // starved, the line would let the TAP device's queue overflow, and a lost
  // frame costs TCP a 200 ms retransmission timeout. It sleeps between frames,
  // so a real-time priority takes little from them. Without the right, it
  // runs at the normal priority.
  sched_param rt{};
  rt.sched_priority = 10;
  sched_setscheduler(0, SCHED_FIFO, &rt);
  const int host = open_tap(argv[1]), bridge = open_tap(argv[2]);
  std::printf("ready\n");
  std::fflush(stdout);

  Line line(4096, frame_max);
  std::vector<uint8_t> inbound(frame_max);
  pollfd fds[2] = {{host, POLLIN, 0}, {bridge, POLLIN, 0}};
  for (;;) {
    int64_t t = now_ns();
    while (!line.empty() && line.head_due() <= t) {
      size_t len = 0;
      const uint8_t* frame = line.head(&len);
      (void)!write(bridge, frame, len);  // failed: the link is cut, the frame lost
      line.pop();
    }
    timespec wait{};
    timespec* timeout = nullptr;
    if (!line.empty()) {
      const int64_t left = line.head_due() - t;
      wait = {time_t(left / 1000000000), long(left % 1000000000)};
      timeout = &wait;
    }
    if (ppoll(fds, 2, timeout, nullptr) < 0 && errno != EINTR) die("ppoll on", argv[1]);
    t = now_ns();
    for (;;) {  // the host's frames enter the line
      uint8_t* slot = line.full() ? inbound.data() : line.tail();
      const ssize_t n = read(host, slot, frame_max);
      if (n <= 0) break;
      if (slot != inbound.data()) line.push(t + delay_ns, size_t(n));
    }
    for (;;) {  // frames for the host pass at once
      const ssize_t n = read(bridge, inbound.data(), frame_max);
      if (n <= 0) break;
      (void)!write(host, inbound.data(), size_t(n));
    }
  }
}
