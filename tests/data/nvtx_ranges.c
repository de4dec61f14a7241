/* A known NVTX structure for tests/test_nsys_rep_e2e.py (recorded with `nsys profile --trace=nvtx,osrt`).
 *
 *   main thread:   start "async" ......................................................... end "async"
 *                  push "outer" { push "inner/with/slash" { mark "tick" } push "inner2" {} }
 *                  (then runs thread 2 and joins it)
 *                  domain "mydomain": push "dom_range" {}
 *   second thread: push "worker" { push "step" {} }
 *
 * Every range lasts a few 2 ms sleeps, so durations are distinct and nonzero.
 * Build: gcc -O0 -I/usr/local/cuda/include nvtx_ranges.c -o nvtx_ranges -ldl -lpthread
 */
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <time.h>

static void nap(int ms) {
    struct timespec ts = {0, ms * 1000000L};
    nanosleep(&ts, NULL);
}

static void *worker(void *arg) {
    (void)arg;
    nvtxRangePushA("worker");
    nap(2);
    nvtxRangePushA("step");
    nap(2);
    nvtxRangePop(); /* step */
    nap(2);
    nvtxRangePop(); /* worker */
    return NULL;
}

int main(void) {
    nvtxRangeId_t async_id = nvtxRangeStartA("async");
    nap(2);

    nvtxRangePushA("outer");
    nap(2);
    nvtxRangePushA("inner/with/slash");
    nap(2);
    nvtxMarkA("tick");
    nap(2);
    nvtxRangePop(); /* inner/with/slash */
    nap(2);
    nvtxRangePushA("inner2");
    nap(4);
    nvtxRangePop(); /* inner2 */
    nap(2);
    nvtxRangePop(); /* outer */
    nap(2);

    pthread_t t;
    if (pthread_create(&t, NULL, worker, NULL) != 0) return 1;
    pthread_join(t, NULL);
    nap(2);

    nvtxDomainHandle_t dom = nvtxDomainCreateA("mydomain");
    nvtxEventAttributes_t attr = {0};
    attr.version = NVTX_VERSION;
    attr.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    attr.messageType = NVTX_MESSAGE_TYPE_ASCII;
    attr.message.ascii = "dom_range";
    nvtxDomainRangePushEx(dom, &attr);
    nap(6);
    nvtxDomainRangePop(dom);
    nap(2);

    nvtxRangeEnd(async_id);
    nvtxDomainDestroy(dom);
    return 0;
}
