/* --device of the commands that run the model: a model loaded from its folder and placed on
 * the backend the flag names (or1_backend_open), the same way for every command. */
#include "cli.h"

#include "or1/core.h"
#include "or1/cuda.h"

#include <string.h>

/* Loads dir and places it on device in the given precision, with gradients when train (else
 * frozen: in bf16 the device holds bf16 weights alone); on failure nothing is left open. */
int cli_model_open(cli_model *cm, const char *dir, const char *device, const char *precision, bool train) {
    memset(cm, 0, sizeof *cm);
    if (or1_model_load(&cm->m, dir)) return -1;
    cm->be = or1_backend_open(device, precision);
    if (cm->be) cm->dm = train ? or1_dmodel_new(cm->be, &cm->m) : or1_dmodel_new_frozen(cm->be, &cm->m);
    if (cm->dm) return 0;
    or1_fail_ctx("--device %s --precision %s", device, precision ? precision : "auto");
    cli_model_close(cm);
    return -1;
}

/* Frees the placed model, its backend and the host model. */
void cli_model_close(cli_model *cm) {
    or1_dmodel_free(cm->dm);
    or1_backend_free(cm->be);
    if (cm->m.params) or1_model_free(&cm->m);
    memset(cm, 0, sizeof *cm);
}
