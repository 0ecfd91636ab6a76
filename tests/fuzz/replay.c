/* main() for fuzz targets in ordinary (gcc, no libFuzzer) builds: feeds every file named on the
 * command line, or every file of a named directory, to LLVMFuzzerTestOneInput() once.  The unit
 * suite uses it to replay the seed corpora, so the targets keep compiling and every input that once
 * crashed a parser stays a regression test. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int count;

static int run_file(const char *path)
{
        FILE *f = fopen(path, "rb");
        uint8_t *buf;
        long n;

        if (f == NULL || fseek(f, 0, SEEK_END) < 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) < 0) {
                fprintf(stderr, "replay: cannot read %s\n", path);
                if (f)
                        fclose(f);
                return -1;
        }
        buf = malloc((size_t) n + 1);
        if (buf == NULL || fread(buf, 1, (size_t) n, f) != (size_t) n) {
                fprintf(stderr, "replay: cannot read %s\n", path);
                free(buf);
                fclose(f);
                return -1;
        }
        fclose(f);
        LLVMFuzzerTestOneInput(buf, (size_t) n);
        free(buf);
        count++;
        return 0;
}

static int run_path(const char *path)
{
        struct stat st;
        struct dirent *e;
        DIR *d;
        int rc = 0;

        if (stat(path, &st) < 0) {
                fprintf(stderr, "replay: %s does not exist\n", path);
                return -1;
        }
        if (!S_ISDIR(st.st_mode))
                return run_file(path);
        d = opendir(path);
        if (d == NULL)
                return -1;
        while ((e = readdir(d)) != NULL) {
                char p[4096];
                if (e->d_name[0] == '.')
                        continue;
                snprintf(p, sizeof(p), "%s/%s", path, e->d_name);
                if (run_file(p) < 0)
                        rc = -1;
        }
        closedir(d);
        return rc;
}

int main(int argc, char **argv)
{
        int rc = 0;
        for (int i = 1; i < argc; i++)
                if (run_path(argv[i]) < 0)
                        rc = 1;
        /* A crash never gets here; reaching the end is the test. */
        printf("1..1\n%sok 1 - replayed %d inputs of %s without a crash\n", rc ? "not " : "", count,
               argc > 1 ? argv[1] : "(nothing)");
        return rc;
}
