#include "support/kafka_mock_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

extern char** environ;

namespace pacer::testing {
namespace {

using Clock = std::chrono::steady_clock;

std::runtime_error sysError(const std::string& what) { return std::runtime_error(what + ": " + std::strerror(errno)); }

// Starts argv[0] (PATH lookup) with stdin from `stdin_path`, stdout to
// `stdout_fd`, and stderr to `stderr_fd` (or to `stderr_path` when
// stderr_fd < 0), with default SIGTERM/SIGINT handling and no blocked signals.
int spawn(const std::vector<std::string>& argv, const std::string& stdin_path, int stdout_fd, int stderr_fd,
          const std::string& stderr_path) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, stdin_path.c_str(), O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, stdout_fd, 1);
  if (stderr_fd >= 0)
    posix_spawn_file_actions_adddup2(&actions, stderr_fd, 2);
  else
    posix_spawn_file_actions_addopen(&actions, 2, stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);

  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, defaults;
  sigemptyset(&none);
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGTERM);
  sigaddset(&defaults, SIGINT);
  sigaddset(&defaults, SIGPIPE);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

  pid_t pid = -1;
  const int rc = posix_spawnp(&pid, args[0], &actions, &attr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) throw std::runtime_error("cannot start " + argv[0] + ": " + std::strerror(rc));
  return pid;
}

// Reads `fd` into `out` until EOF, until `stop_at_newline` sees a full line,
// or until `deadline`. Waits in poll(), never spins. Returns true on EOF.
bool readUntil(int fd, std::string& out, Clock::time_point deadline, bool stop_at_newline) {
  std::array<char, 4096> buf{};
  for (;;) {
    if (stop_at_newline && out.find('\n') != std::string::npos) return false;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return false;
    pollfd p{fd, POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(left));
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) throw sysError("poll");
    if (ready == 0) return false;
    const ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return true;
    out.append(buf.data(), static_cast<std::size_t>(n));
  }
}

int exitCode(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string makeTempDir(const char* prefix) {
  std::string tmpl = std::filesystem::temp_directory_path().string() + "/" + prefix + "XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr) throw sysError("mkdtemp");
  return tmpl;
}

}  // namespace

std::string defaultKafkaMockBinary() {
  if (const char* env = std::getenv("PACER_KAFKA_MOCK"); env != nullptr && *env != '\0') return env;
#ifdef PACER_KAFKA_MOCK_BIN
  return PACER_KAFKA_MOCK_BIN;
#else
  return "pacer-kafka-mock";
#endif
}

KafkaMockProcess::KafkaMockProcess(KafkaMockOptions options) {
  dir_ = makeTempDir("pacer-kafka-mock-");
  bootstrap_file_ = dir_ + "/bootstrap";
  std::vector<std::string> argv{options.binary.empty() ? defaultKafkaMockBinary() : options.binary,
                                "--brokers",
                                std::to_string(options.brokers),
                                "--bootstrap-file",
                                bootstrap_file_,
                                "--die-with-parent"};
  for (const std::string& t : options.topics) {
    argv.push_back("--topic");
    argv.push_back(t);
  }
  argv.insert(argv.end(), options.extra.begin(), options.extra.end());

  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw sysError("pipe2");
  try {
    pid_ = spawn(argv, "/dev/null", fds[1], -1, dir_ + "/stderr.log");
  } catch (...) {
    ::close(fds[0]);
    ::close(fds[1]);
    std::filesystem::remove_all(dir_);
    throw;
  }
  ::close(fds[1]);  // only the child holds the write end: EOF means it exited
  stdout_fd_ = fds[0];

  std::string out;
  std::string why;
  try {
    const bool eof = readUntil(stdout_fd_, out, Clock::now() + options.start_limit, true);
    const std::size_t newline = out.find('\n');
    std::error_code ec;
    if (newline != std::string::npos && std::filesystem::exists(bootstrap_file_, ec)) {
      stdout_line_ = out.substr(0, newline);
      bootstraps_ = readFile(bootstrap_file_);
      while (!bootstraps_.empty() && (bootstraps_.back() == '\n' || bootstraps_.back() == '\r')) bootstraps_.pop_back();
      if (!bootstraps_.empty()) return;
    }
    why = eof ? "exited before publishing its bootstrap list"
              : "did not publish its bootstrap list within " + std::to_string(options.start_limit.count()) + " ms";
  } catch (const std::exception& e) {
    why = std::string("could not be watched: ") + e.what();
  }
  // The destructor does not run for a constructor that throws: clean up here.
  const std::string err = stderrText();
  killNow();
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
  throw std::runtime_error("pacer-kafka-mock " + why + "; stdout: '" + out + "'; stderr: '" + err + "'");
}

KafkaMockProcess::~KafkaMockProcess() {
  killNow();
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

std::string KafkaMockProcess::stderrText() const { return readFile(dir_ + "/stderr.log"); }

void KafkaMockProcess::killNow() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
  }
  if (stdout_fd_ >= 0) {
    ::close(stdout_fd_);
    stdout_fd_ = -1;
  }
}

int KafkaMockProcess::stop(std::chrono::milliseconds limit) {
  if (pid_ <= 0) return -1;
  ::kill(pid_, SIGTERM);
  std::string rest;
  const bool exited = readUntil(stdout_fd_, rest, Clock::now() + limit, false);
  if (!exited) ::kill(pid_, SIGKILL);
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
  ::close(stdout_fd_);
  stdout_fd_ = -1;
  return exitCode(status);
}

int runProcess(const std::vector<std::string>& argv, std::string& output, const std::string& input,
               std::chrono::milliseconds limit) {
  output.clear();
  const std::string dir = makeTempDir("pacer-run-");
  const std::string input_path = dir + "/stdin";
  std::ofstream(input_path) << input;
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw sysError("pipe2");
  int pid = -1;
  try {
    pid = spawn(argv, input_path, fds[1], fds[1], "");
  } catch (...) {
    ::close(fds[0]);
    ::close(fds[1]);
    std::filesystem::remove_all(dir);
    throw;
  }
  ::close(fds[1]);
  const bool eof = readUntil(fds[0], output, Clock::now() + limit, false);
  if (!eof) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  ::close(fds[0]);
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  return exitCode(status);
}

}  // namespace pacer::testing
