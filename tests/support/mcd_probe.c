/* A stand-in machine-config-daemon for the boot tests (tests/it/boot.rs), built static so
 * that it fits every bootimage. Run as `firstboot-complete-machineconfig`, it behaves
 * like an MCD of MCO 4.13 or later at the step that matters on a host: without
 * _MCD_DID_REEXEC set, or --root-mount=/, it cannot re-exec into /rootfs and retries
 * every few seconds for ever, as the real one does every minute. Otherwise it reads
 * the encapsulated machine config, records its command line and environment in
 * /var/lib/boot-probe/mcd-run, and exits 0 (the real one would rebase the OS). */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *machine_config = "/etc/ignition-machine-config-encapsulated.json";

int main(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "firstboot-complete-machineconfig") != 0) {
        printf("machine-config-daemon boot-test probe\n");
        return 0;
    }
    int root_is_host = 0;
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--root-mount=/") == 0) {
            root_is_host = 1;
        }
    }
    const char *reexec = getenv("_MCD_DID_REEXEC");
    if (!reexec && !root_is_host) {
        for (;;) {
            fprintf(stderr, "error: failed to re-exec: failed to get target OS: "
                            "No content available from os-release files\n");
            fprintf(stderr, "Sleeping 1 minute for retry\n");
            fflush(stderr);
            sleep(5);
        }
    }
    FILE *mc = fopen(machine_config, "r");
    if (!mc) {
        perror(machine_config);
        return 1;
    }
    long size = 0;
    while (fgetc(mc) != EOF) {
        size++;
    }
    fclose(mc);
    FILE *out = fopen("/var/lib/boot-probe/mcd-run", "w");
    if (!out) {
        perror("/var/lib/boot-probe/mcd-run");
        return 1;
    }
    for (int i = 0; i < argc; i++) {
        fprintf(out, "argv=%s\n", argv[i]);
    }
    fprintf(out, "_MCD_DID_REEXEC=%s\n", reexec ? reexec : "");
    fprintf(out, "machine_config_bytes=%ld\n", size);
    fclose(out);
    printf("read the machine config %s (%ld bytes)\n", machine_config, size);
    return 0;
}
