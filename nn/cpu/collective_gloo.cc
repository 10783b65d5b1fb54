/*  collective_gloo — pf_collective on Gloo (see collective.h). The only C++ in PixFlow: a thin
    extern "C" layer that turns Gloo's exceptions into error strings. */
#include "nn/collective.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gloo/allreduce.h>
#include <gloo/broadcast.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/device.h>

namespace {

/* gloo::rendezvous::Store over the coordinator's key/value store. get/wait poll (the store
   answers "not yet" rather than blocking) until the key appears or the timeout passes. */
class KvStore : public gloo::rendezvous::Store {
 public:
  KvStore(pf_kv_set_fn set, pf_kv_get_fn get, void* ctx, std::chrono::milliseconds timeout)
      : set_(set), get_(get), ctx_(ctx), timeout_(timeout) {}

  void set(const std::string& key, const std::vector<char>& data) override {
    if (set_(ctx_, key.c_str(), data.data(), data.size()) != 0)
      throw std::runtime_error("key/value store: cannot set '" + key + "'");
  }

  std::vector<char> get(const std::string& key) override {
    auto deadline = std::chrono::steady_clock::now() + timeout_;
    for (;;) {
      void* value = nullptr;
      size_t len = 0;
      int rc = get_(ctx_, key.c_str(), &value, &len);
      if (rc < 0) throw std::runtime_error("key/value store: cannot get '" + key + "'");
      if (rc == 1) {
        std::vector<char> out(static_cast<char*>(value), static_cast<char*>(value) + len);
        free(value);
        return out;
      }
      if (std::chrono::steady_clock::now() > deadline)
        throw std::runtime_error("key/value store: '" + key + "' did not appear in time " +
                                 "(did every worker start?)");
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }

  void wait(const std::vector<std::string>& keys) override { wait(keys, timeout_); }

  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override {
    (void)timeout;
    for (const auto& k : keys) get(k);
  }

 private:
  pf_kv_set_fn set_;
  pf_kv_get_fn get_;
  void* ctx_;
  std::chrono::milliseconds timeout_;
};

void set_err(char* err, size_t errlen, const char* what, const char* msg) {
  snprintf(err, errlen, "gloo %s: %s", what, msg);
}

}  // namespace

struct pf_collective {
  std::shared_ptr<gloo::rendezvous::Context> context;
};

extern "C" pf_collective* pf_collective_gloo_new(int rank, int size, const char* hostname,
                                                 const char* prefix, pf_kv_set_fn set,
                                                 pf_kv_get_fn get, void* kv_ctx,
                                                 double timeout_s, char* err, size_t errlen) {
  try {
    auto timeout = std::chrono::milliseconds(static_cast<long>(timeout_s * 1000));
    KvStore store(set, get, kv_ctx, timeout);
    gloo::rendezvous::PrefixStore prefixed(prefix, store);
    gloo::transport::tcp::attr attr(hostname);
    auto device = gloo::transport::tcp::CreateDevice(attr);
    auto context = std::make_shared<gloo::rendezvous::Context>(rank, size);
    context->setTimeout(timeout);
    context->connectFullMesh(prefixed, device);
    auto* c = new pf_collective;
    c->context = context;
    return c;
  } catch (const std::exception& e) {
    set_err(err, errlen, "rendezvous", e.what());
  } catch (...) {
    set_err(err, errlen, "rendezvous", "unknown failure");
  }
  return nullptr;
}

extern "C" int pf_collective_allreduce_sum(pf_collective* c, float* buf, size_t n, char* err,
                                           size_t errlen) {
  try {
    gloo::AllreduceOptions opts(c->context);
    opts.setOutput(buf, n);
    void (*sum)(void*, const void*, const void*, size_t) = &gloo::sum<float>;
    opts.setReduceFunction(sum);
    gloo::allreduce(opts);
    return 0;
  } catch (const std::exception& e) {
    set_err(err, errlen, "all-reduce", e.what());
  } catch (...) {
    set_err(err, errlen, "all-reduce", "unknown failure");
  }
  return -1;
}

extern "C" int pf_collective_broadcast(pf_collective* c, float* buf, size_t n, int root,
                                       char* err, size_t errlen) {
  try {
    gloo::BroadcastOptions opts(c->context);
    opts.setOutput(buf, n);
    opts.setRoot(root);
    gloo::broadcast(opts);
    return 0;
  } catch (const std::exception& e) {
    set_err(err, errlen, "broadcast", e.what());
  } catch (...) {
    set_err(err, errlen, "broadcast", "unknown failure");
  }
  return -1;
}

extern "C" void pf_collective_destroy(pf_collective** c) {
  delete *c;
  *c = nullptr;
}
