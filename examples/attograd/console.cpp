// Standard streams that never crash the program, and the process's start-up settings.
#include "console.hpp"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

namespace attograd::cli {

void prepare_process() noexcept {
    for (int fd = 0; fd <= 2; ++fd) {
        if (::fcntl(fd, F_GETFD) != -1) continue;
        // open() returns the lowest free descriptor: fd itself, since the ones below are open.
        const int opened = ::open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
        if (opened >= 0 && opened != fd) {
            ::dup2(opened, fd);
            ::close(opened);
        }
    }
    ::signal(SIGPIPE, SIG_IGN);
    ::signal(SIGXFSZ, SIG_IGN);
}

}  // namespace attograd::cli
