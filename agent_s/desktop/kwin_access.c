/* agent-s-kwin-access: the one program KWin authorises for agent-s (see agent_s/desktop/kde_access.py).

   KWin gives its screenshot interface (org.kde.KWin.ScreenShot2, on D-Bus) and its fake-input
   protocol (org_kde_kwin_fake_input, on Wayland) only to a client whose executable has an
   installed .desktop entry naming those interfaces. It reads the executable of the process at
   the other end of the connection, so a Python program can only be authorised by authorising
   the interpreter itself, and with it every Python script. This program is authorised instead:

       agent-s-kwin-access WAYLAND_SOCKET BUS_SOCKET      (a path; "@name": an abstract socket)

   It connects to the compositor's socket and to the session bus, hands the two connected
   sockets to its parent through its standard input (a Unix socket, SCM_RIGHTS), and waits
   until that socket closes; the connections stay its own while it lives, so KWin sees this
   program at their end. It speaks neither protocol: agent-s does, on the sockets it was given.
   It reads nothing else and starts nothing. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static int connect_to(const char *where) {
    struct sockaddr_un addr;
    socklen_t size;
    size_t length = strlen(where);
    int fd;
    memset(&addr, 0, sizeof addr);
    addr.sun_family = AF_UNIX;
    if (length == 0 || length >= sizeof addr.sun_path) {
        fprintf(stderr, "agent-s-kwin-access: bad socket path %s\n", where);
        return -1;
    }
    memcpy(addr.sun_path, where, length);
    size = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + length);
    if (where[0] == '@') {
        addr.sun_path[0] = '\0'; /* an abstract socket: no trailing NUL in its name */
    } else {
        size += 1;
    }
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&addr, size) < 0) {
        fprintf(stderr, "agent-s-kwin-access: cannot connect to %s: %s\n", where, strerror(errno));
        return -1;
    }
    return fd;
}

int main(int argc, char **argv) {
    int fds[2];
    char ok = 'k', byte;
    struct iovec part = {&ok, 1};
    char room[CMSG_SPACE(sizeof fds)];
    struct msghdr message;
    struct cmsghdr *header;
    if (argc != 3) {
        fprintf(stderr, "usage: agent-s-kwin-access WAYLAND_SOCKET BUS_SOCKET (run by agent-s)\n");
        return 2;
    }
    fds[0] = connect_to(argv[1]);
    fds[1] = connect_to(argv[2]);
    if (fds[0] < 0 || fds[1] < 0) {
        return 1;
    }
    memset(&message, 0, sizeof message);
    memset(room, 0, sizeof room);
    message.msg_iov = &part;
    message.msg_iovlen = 1;
    message.msg_control = room;
    message.msg_controllen = sizeof room;
    header = CMSG_FIRSTHDR(&message);
    header->cmsg_level = SOL_SOCKET;
    header->cmsg_type = SCM_RIGHTS;
    header->cmsg_len = CMSG_LEN(sizeof fds);
    memcpy(CMSG_DATA(header), fds, sizeof fds);
    if (sendmsg(0, &message, 0) != 1) {
        fprintf(stderr, "agent-s-kwin-access: cannot hand over the connections: %s\n",
                strerror(errno));
        return 1;
    }
    /* Live as long as agent-s does: KWin checks this process's executable on every call. */
    for (;;) {
        ssize_t got = read(0, &byte, 1);
        if (got == 0 || (got < 0 && errno != EINTR)) {
            return 0;
        }
    }
}
