#include "process/attempt_processes.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace tailsweep {
namespace {

namespace fs = std::filesystem;

// The cgroup directories of attempts: PREFIX + "PID-N-RANDOM", PID the
// worker's (so a later worker knows whether their worker still lives).
constexpr char kGroupPrefix[] = "tailsweep-";

std::string ReadSmallFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

bool WriteSmallFile(const std::string& path, const std::string& text) {
  const int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok =
      write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  close(fd);
  return ok;
}

// The state letter of /proc/PID/stat ('Z': a zombie); 0 when gone.
char ProcessState(pid_t pid) {
  const std::string stat = ReadSmallFile(absl::StrCat("/proc/", pid, "/stat"));
  const size_t paren = stat.rfind(')');
  return paren == std::string::npos || paren + 2 >= stat.size()
             ? 0
             : stat[paren + 2];
}

bool Alive(pid_t pid) {
  const char state = ProcessState(pid);
  return state != 0 && state != 'Z' && state != 'X';
}

// Every pid in /proc.
std::vector<pid_t> AllProcesses() {
  std::vector<pid_t> out;
  DIR* dir = opendir("/proc");
  if (dir == nullptr) return out;
  while (dirent* e = readdir(dir)) {
    int pid = 0;
    if (absl::SimpleAtoi(e->d_name, &pid) && pid > 0) out.push_back(pid);
  }
  closedir(dir);
  return out;
}

bool CarriesMarker(pid_t pid, const std::string& entry) {
  const std::string env =
      ReadSmallFile(absl::StrCat("/proc/", pid, "/environ"));
  for (absl::string_view var : absl::StrSplit(env, '\0')) {
    if (var == entry) return true;
  }
  return false;
}

std::vector<pid_t> CgroupProcesses(const std::string& cgroup) {
  std::vector<pid_t> out;
  for (absl::string_view line : absl::StrSplit(
           ReadSmallFile(cgroup + "/cgroup.procs"), '\n', absl::SkipEmpty())) {
    int pid = 0;
    if (absl::SimpleAtoi(line, &pid) && pid > 0) out.push_back(pid);
  }
  return out;
}

// This process's cgroup v2 directory, or "" with *why.
std::string OwnCgroup(std::string* why) {
  std::string relative;
  for (absl::string_view line :
       absl::StrSplit(ReadSmallFile("/proc/self/cgroup"), '\n')) {
    if (absl::ConsumePrefix(&line, "0::")) relative = std::string(line);
  }
  if (relative.empty()) {
    *why = "no cgroup v2 line in /proc/self/cgroup";
    return "";
  }
  // /proc/self/mountinfo: "... MOUNT_POINT OPTIONS ... - cgroup2 ...".
  for (absl::string_view line :
       absl::StrSplit(ReadSmallFile("/proc/self/mountinfo"), '\n')) {
    const std::vector<absl::string_view> f = absl::StrSplit(line, ' ');
    for (size_t i = 0; i + 1 < f.size(); ++i) {
      if (f[i] == "-" && f[i + 1] == "cgroup2" && f.size() > 4) {
        return (fs::path(std::string(f[4])) / relative.substr(1)).string();
      }
    }
  }
  *why = "cgroup2 is not mounted";
  return "";
}

// OK when attempts' cgroups can be made and used under `dir`: a probe
// cgroup is made, has cgroup.kill (Linux 5.14), and is removed.
absl::Status CheckCgroupRoot(const std::string& dir) {
  if (!fs::exists(fs::path(dir) / "cgroup.procs")) {
    return absl::FailedPreconditionError(
        absl::StrCat(dir, " is not a cgroup v2 directory (no cgroup.procs)"));
  }
  const std::string probe =
      (fs::path(dir) / absl::StrCat(kGroupPrefix, "probe-", getpid())).string();
  if (mkdir(probe.c_str(), 0755) != 0 && errno != EEXIST) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot make a cgroup under ", dir, ": ",
                     std::strerror(errno), " (not delegated to this user?)"));
  }
  const bool kill = fs::exists(fs::path(probe) / "cgroup.kill");
  const bool procs = access((probe + "/cgroup.procs").c_str(), W_OK) == 0;
  rmdir(probe.c_str());
  if (!kill) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the kernel has no cgroup.kill (Linux 5.14 or newer) under ", dir));
  }
  if (!procs) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot move processes into cgroups under ", dir));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status BecomeSubreaper() {
  if (prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) {
    return absl::InternalError(absl::StrCat("cannot become a child subreaper: ",
                                            std::strerror(errno)));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> AttemptCgroupRoot(const std::string& choice,
                                              std::string* why) {
  std::string unused;
  if (why == nullptr) why = &unused;
  if (choice == "off") return std::string();
  if (choice == "auto") {
    const std::string own = OwnCgroup(why);
    if (own.empty()) return std::string();
    if (absl::Status s = CheckCgroupRoot(own); !s.ok()) {
      *why = std::string(s.message());
      return std::string();
    }
    return own;
  }
  if (absl::Status s = CheckCgroupRoot(choice); !s.ok()) return s;
  return choice;
}

absl::StatusOr<AttemptGroup> NewAttemptGroup(const std::string& cgroup_root) {
  static std::atomic<int64_t> next{0};
  static const uint32_t salt = std::random_device{}();
  AttemptGroup group;
  group.marker =
      absl::StrCat(getpid(), "-", next.fetch_add(1), "-", absl::Hex(salt));
  if (!cgroup_root.empty()) {
    group.cgroup =
        (fs::path(cgroup_root) / absl::StrCat(kGroupPrefix, group.marker))
            .string();
    if (mkdir(group.cgroup.c_str(), 0755) != 0) {
      return absl::InternalError(absl::StrCat(
          "cannot make the cgroup ", group.cgroup, ": ", std::strerror(errno)));
    }
  }
  return group;
}

bool EnterCgroup(int fd) { return write(fd, "0", 1) == 1; }

std::vector<pid_t> GroupProcesses(const AttemptGroup& group) {
  std::vector<pid_t> found;
  const pid_t self = getpid();
  if (!group.cgroup.empty()) {
    for (pid_t pid : CgroupProcesses(group.cgroup)) {
      if (pid != self && Alive(pid)) found.push_back(pid);
    }
    return found;
  }
  const std::string entry = absl::StrCat(kAttemptEnv, "=", group.marker);
  for (pid_t pid : AllProcesses()) {
    if (pid != self && CarriesMarker(pid, entry) && Alive(pid)) {
      found.push_back(pid);
    }
  }
  return found;
}

int SignalGroup(const AttemptGroup& group, int signal) {
  const std::vector<pid_t> pids = GroupProcesses(group);
  if (signal == SIGKILL && !group.cgroup.empty()) {
    WriteSmallFile(group.cgroup + "/cgroup.kill", "1");
  }
  for (pid_t pid : pids) kill(pid, signal);
  return static_cast<int>(pids.size());
}

bool RemoveGroup(const AttemptGroup& group) {
  if (group.cgroup.empty()) return true;
  return rmdir(group.cgroup.c_str()) == 0 || errno == ENOENT;
}

int EndStaleAttempts(const std::string& cgroup_root) {
  // A marker or cgroup name begins with its worker's pid.
  const auto stale = [](absl::string_view marker) {
    int owner = 0;
    return absl::SimpleAtoi(marker.substr(0, marker.find('-')), &owner) &&
           owner != getpid() && !Alive(owner);
  };
  int ended = 0;
  const std::string prefix = absl::StrCat(kAttemptEnv, "=");
  for (pid_t pid : AllProcesses()) {
    const std::string env =
        ReadSmallFile(absl::StrCat("/proc/", pid, "/environ"));
    for (absl::string_view var : absl::StrSplit(env, '\0')) {
      if (absl::ConsumePrefix(&var, prefix) && stale(var) && Alive(pid)) {
        kill(pid, SIGKILL);
        ++ended;
        break;
      }
    }
  }
  if (cgroup_root.empty()) return ended;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(cgroup_root, ec)) {
    const std::string name = e.path().filename().string();
    absl::string_view marker = name;
    if (!e.is_directory(ec) || !absl::ConsumePrefix(&marker, kGroupPrefix) ||
        !stale(marker)) {
      continue;  // not an attempt's, or its worker lives
    }
    WriteSmallFile(e.path().string() + "/cgroup.kill", "1");
    for (int i = 0; i < 100 && rmdir(e.path().c_str()) != 0 && errno == EBUSY;
         ++i) {
      usleep(20000);  // the killed processes leave the cgroup
    }
    ++ended;
  }
  return ended;
}

}  // namespace tailsweep
