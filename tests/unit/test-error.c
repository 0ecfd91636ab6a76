/* lib/util/error.c: an error's kind, not its errno, picks the exit status, through one table. */
#include <errno.h>
#include <string.h>

#include "cleanup.h"
#include "error.h"
#include "gpuhook.h"
#include "tests/tap.h"

int main(void)
{
        {
                _cleanup_error_ gh_error_t e = NULL;
                gh_err(&e, ENODEV, "opening /dev/something");
                is_int(e->code, ENODEV, "a system call's ENODEV is kept as the code");
                is_int(e->kind, GH_ERR_SYSTEM, "and the error is a system error");
                is_int(gh_error_exit_status(e), 1, "a real ENODEV exits 1, not 3 (no driver)");
                ok(strstr(e->msg, strerror(ENODEV)) != NULL, "the message says what the system said");
        }
        {
                _cleanup_error_ gh_error_t e = NULL;
                gh_err(&e, ENOENT, "opening a file");
                is_int(gh_error_exit_status(e), 1, "a real ENOENT exits 1, not 3");
        }
        {
                _cleanup_error_ gh_error_t e = NULL;
                gh_err(&e, 0, "something failed");
                is_int(e->kind, GH_ERR_FAILURE, "no errno: a plain failure");
                is_int(gh_error_exit_status(e), 1, "a failure exits 1");
        }
        {
                static const struct {
                        enum gpuhook_error_kind kind;
                        int status;
                } table[] = {
                        { GH_ERR_USAGE, 2 },
                        { GH_ERR_NO_DRIVER, 3 },
                        { GH_ERR_REQUIREMENT, 4 },
                };
                for (size_t i = 0; i < GH_ARRAY_SIZE(table); i++) {
                        _cleanup_error_ gh_error_t e = NULL;
                        gh_err(&e, ENODEV, "x");
                        ok(gh_err_kind(&e, table[i].kind) == -1, "gh_err_kind returns -1");
                        gh_err_wrap(&e, "context");
                        is_int(e->kind, table[i].kind, "kind %d survives gh_err_wrap", table[i].kind);
                        is_int(e->code, ENODEV, "and the errno too");
                        is_int(gh_error_exit_status(e), table[i].status, "kind %d exits %d", table[i].kind,
                               table[i].status);
                        is_int(gpuhook_error_exit_status(e), table[i].status, "the public API agrees");
                        is_int(gh_error_kind_of_status(table[i].status), table[i].kind,
                               "status %d reads back as kind %d", table[i].status, table[i].kind);
                }
        }
        {
                _cleanup_error_ gh_error_t e = NULL;
                ok(gh_err_usage(&e, "bad --thing '%s'", "x") == -1, "gh_err_usage returns -1");
                is_str(e->msg, "bad --thing 'x'", "gh_err_usage: the message, no errno text");
                is_int(e->kind, GH_ERR_USAGE, "gh_err_usage: kind usage");
                is_int(e->code, 0, "gh_err_usage: no errno");
                is_int(gh_error_exit_status(e), GH_EXIT_USAGE, "a usage error exits 2");
        }
        is_int(gh_error_exit_status(NULL), 1, "no error object: 1");
        is_int(gh_error_kind_of_status(1), GH_ERR_FAILURE, "status 1 reads back as a failure");
        is_int(gh_error_kind_of_status(137), GH_ERR_FAILURE, "an unknown status reads back as a failure");
        return tap_done();
}
