/* lib/util/strutil.c: the string helpers every layer shares. */
#include <string.h>

#include "strutil.h"
#include "tap.h"

int main(void)
{
        char a[] = " \t compute,utility \r\n\v\f", b[] = "   ", c[] = "x";

        ok(gh_is_blank(' ') && gh_is_blank('\t') && gh_is_blank('\n') && gh_is_blank('\r') && gh_is_blank('\v') &&
                   gh_is_blank('\f'),
           "blanks: space, \\t, \\n, \\r, \\v, \\f");
        ok(!gh_is_blank('a') && !gh_is_blank('\0') && !gh_is_blank(',') && !gh_is_blank((char) 0xa0),
           "not blank: letters, NUL, comma, a non-ASCII byte");
        is_str(gh_trim(a), "compute,utility", "trim: both ends, every blank");
        is_str(gh_trim(b), "", "trim: blanks only");
        is_str(gh_trim(c), "x", "trim: nothing to trim");
        is_str(gh_base_name("/usr/lib/libcuda.so.1"), "libcuda.so.1", "base name of a path");
        is_str(gh_base_name("libcuda.so.1"), "libcuda.so.1", "base name of a bare name");
        is_str(gh_base_name("/dir/"), "", "base name of a directory path is empty");
        ok(gh_ends_with("nvidia.com-gpu.json", ".json") && !gh_ends_with("a.yaml", ".json") &&
                   !gh_ends_with("json", ".json") && gh_ends_with(".json", ".json"),
           "ends_with");
        return tap_done();
}
