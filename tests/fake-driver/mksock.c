/* mksock PATH: leaves a unix socket file at PATH (the driver's persistenced and fabricmanager
 * sockets), which a shell cannot create. */
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int main(int argc, char **argv)
{
        struct sockaddr_un addr = { .sun_family = AF_UNIX };
        int fd;

        if (argc != 2) {
                fprintf(stderr, "usage: mksock PATH\n");
                return 2;
        }
        if (strlen(argv[1]) >= sizeof(addr.sun_path)) {
                fprintf(stderr, "mksock: path too long for a unix socket: %s; use a shorter directory\n", argv[1]);
                return 1;
        }
        strcpy(addr.sun_path, argv[1]);
        fd = socket(AF_UNIX, SOCK_STREAM, 0);
        if (fd < 0 || bind(fd, (struct sockaddr *) &addr, sizeof(addr)) < 0) {
                fprintf(stderr, "mksock: cannot create socket %s: %m\n", argv[1]);
                return 1;
        }
        close(fd);
        return 0;
}
