/* _wick.h — what the extension's C files share: _wick.c (tensors,
 * ops, errors, devices) lends its helpers to model.c (models, tokenizers
 * and text generation), engine.c (the batched engine), comm.c
 * (collectives) and graph.c (recorded graphs), which register their
 * types and functions into the same module. Hidden symbols: nothing here is exported from the module.
 */
#ifndef WICK_PY_INTERNAL_H
#define WICK_PY_INTERNAL_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include "wick.h"

#define WKPY_HIDDEN __attribute__((visibility("hidden")))

/* The Python exception class for a wick status. */
WKPY_HIDDEN PyObject *exc_for(wk_status s);
/* Raise wick's last error of this thread (unless an exception is set
 * already); returns NULL. */
WKPY_HIDDEN PyObject *raise_wk(void);
/* A device by name (a str, a Tensor's device, torch.device, None: the
 * cpu), opened once and kept; NULL with an exception set. */
WKPY_HIDDEN wk_device *device_of(PyObject *o);
/* A dtype from a str, numpy or torch dtype; -1 with TypeError. */
WKPY_HIDDEN int parse_dtype(PyObject *o, wk_dtype *out);
/* A new wick.Tensor owning t (NULL t: raise wick's last error). */
WKPY_HIDDEN PyObject *wrap(wk_tensor *t);
/* Readies type and adds it to module as name; -1 with an exception set. */
WKPY_HIDDEN int wkpy_add_type(PyObject *module, const char *name, PyTypeObject *type);

/* model.c: adds Model, Tokenizer, TokenStream, Generation and the chat
 * functions to the module; -1 with an exception set. */
WKPY_HIDDEN int wkpy_model_init(PyObject *module);
/* model.c, for engine.c. wkpy_model_engine_claim: the wk_llm of a
 * wick.Model that is open and free (an unfinished generation is closed),
 * marked in use by an engine (its own cache calls and close refuse) until
 * wkpy_model_engine_release; NULL with an exception (not a Model, closed,
 * in a call, or another engine's). wkpy_prompt_ids: a prompt as
 * Model.generate takes it (str, chat messages, token ids) as malloc'd ids;
 * -1 with an exception. */
struct wk_llm;
WKPY_HIDDEN struct wk_llm *wkpy_model_engine_claim(PyObject *model);
WKPY_HIDDEN void wkpy_model_engine_release(PyObject *model);
#include "wick_llm.h"
/* model.c: the sampling arguments of generate/submit checked and put in
 * *s (seed_o: an int or NULL); -1 with a ValueError naming `who` */
WKPY_HIDDEN int wkpy_sampling_args(const char *who, wk_sampling *s, long long max_tokens, long long top_k,
                                   long long last_n, PyObject *seed_o);
WKPY_HIDDEN int wkpy_prompt_ids(PyObject *model, PyObject *prompt, int chat, const char *system, int32_t **ids,
                                int64_t *n);
/* engine.c: adds Engine and EngineRequest; -1 with an exception set. */
WKPY_HIDDEN int wkpy_engine_init(PyObject *module);
/* The wk_tensor of a wick.Tensor (borrowed); NULL with TypeError. */
WKPY_HIDDEN wk_tensor *wkpy_tensor_of(PyObject *o);
/* comm.c: adds Comm and the communicator functions; -1 with an exception
 * set. wkpy_comm_of: the wk_comm of a wick.Comm (borrowed), NULL with an
 * exception (not a Comm, or closed). */
struct wk_comm;
WKPY_HIDDEN int wkpy_comm_init(PyObject *module);
WKPY_HIDDEN struct wk_comm *wkpy_comm_of(PyObject *o);

/* graph.c: adds Graph; -1 with an exception set. wkpy_graph_keep: wrap()
 * hands it every new Tensor, which the Graph recording now (if any, on
 * t's device) keeps alive with it. */
WKPY_HIDDEN int wkpy_graph_init(PyObject *module);
WKPY_HIDDEN void wkpy_graph_keep(PyObject *tensor, const wk_tensor *t);

#endif
