/* The /init of a tiny initramfs (scripts/boot-vm.sh): it says it is up and powers the VM
 * off. With a fw_cfg item named opt/mcd-inject/blob and the fw_cfg driver beside it
 * (/qemu_fw_cfg.ko), it first reads that item from sysfs as Ignition's qemu provider
 * does, and prints how long each MiB took: this is how the cost of handing a config over
 * fw_cfg was measured (benches/fwcfg.sh). Built static; it needs nothing else. */

#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static void read_blob(void)
{
    int ko = open("/qemu_fw_cfg.ko", O_RDONLY | O_CLOEXEC);
    if (ko < 0) {
        return;
    }
    if (syscall(SYS_finit_module, ko, "", 0) != 0) {
        perror("tiny-init: loading qemu_fw_cfg");
    }
    close(ko);
    const char *path = "/sys/firmware/qemu_fw_cfg/by_name/opt/mcd-inject/blob/raw";
    int fd = open(path, O_RDONLY);
    if (fd < 0) {
        perror(path);
        return;
    }
    static char buf[1 << 20];
    long total = 0, next = 1 << 20;
    double start = now(), mark = start;
    for (;;) {
        ssize_t n = read(fd, buf, sizeof buf);
        if (n <= 0) {
            break;
        }
        total += n;
        if (total >= next) {
            double t = now();
            printf("tiny-init: fw_cfg MiB %ld read in %.2f s (%.2f s in all)\n", next >> 20,
                   t - mark, t - start);
            fflush(stdout);
            mark = t;
            next += 1 << 20;
        }
    }
    printf("tiny-init: fw_cfg read %ld bytes in %.2f s\n", total, now() - start);
    close(fd);
}

int main(void)
{
    mount("sysfs", "/sys", "sysfs", 0, NULL);
    mount("devtmpfs", "/dev", "devtmpfs", 0, NULL);
    printf("tiny-init: up\n");
    fflush(stdout);
    read_blob();
    printf("tiny-init: powering off\n");
    fflush(stdout);
    sync();
    reboot(RB_POWER_OFF);
    return 0;
}
