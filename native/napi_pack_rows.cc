// Pack rows read straight into a caller's buffer. The addon is also a SQLite loadable extension:
// lib/store/chunk-run.ts loads it into a Store connection (better-sqlite3's loadExtension), and
// its entry point registers that connection and its API table (the very SQLite library that
// connection runs on: nothing else here links SQLite, so no second copy of SQLite ever holds
// locks on a Store file). packRead then reads a stretch of one `packs` row through SQLite's
// incremental blob I/O into a caller's buffer: no row assembled by SQLite, no Buffer per row.
// The read is as authenticated as a SELECT: it returns stored bytes, which the caller decodes
// and verifies against the chunk ids like any other. A connection is used only on the thread
// that owns it (better-sqlite3's rule); the registry itself is shared by the process's threads.
#ifndef _WIN32
#include <dlfcn.h>
#define LAYERFS_EXPORT __attribute__((visibility("default")))
#else
#define LAYERFS_EXPORT __declspec(dllexport)
#endif

#include <cstdint>
#include <mutex>
#include <unordered_map>

#include "napi_util.h"
#include "sqlite3ext.h"

namespace layerfs {

namespace {

struct Conn {
  sqlite3* db;
  const sqlite3_api_routines* api;
};

std::mutex registry_mu;
std::unordered_map<int64_t, Conn>& Registry() {
  static auto* r = new std::unordered_map<int64_t, Conn>();
  return *r;
}
int64_t next_handle = 1;

// The API table of the SQLite library the first registered connection runs on; a connection of
// another copy of SQLite (another better-sqlite3 in the process) is refused, and its reader
// reads rows with SELECT.
const sqlite3_api_routines* the_api = nullptr;

// SELECT layerfs_pack_rows(): the connection's handle (the function's user data).
void HandleFn(sqlite3_context* ctx, int, sqlite3_value**) {
  the_api->result_int64(ctx, static_cast<int64_t>(reinterpret_cast<intptr_t>(the_api->user_data(ctx))));
}

// The connection closed (or the function was replaced): its handle is gone.
void Forget(void* p) {
  const int64_t h = static_cast<int64_t>(reinterpret_cast<intptr_t>(p));
  std::lock_guard<std::mutex> lock(registry_mu);
  Registry().erase(h);
}

}  // namespace

}  // namespace layerfs

// The extension's entry point (named explicitly by the loader). A connection loaded twice keeps
// its first handle.
extern "C" LAYERFS_EXPORT int sqlite3_layerfspackrows_init(sqlite3* db, char** err,
                                                                                    const sqlite3_api_routines* api) {
  using namespace layerfs;
  int64_t h = 0;
  {
    std::lock_guard<std::mutex> lock(registry_mu);
    for (const auto& e : Registry()) {
      if (e.second.db == db) return SQLITE_OK;
    }
    if (!the_api) the_api = api;
    if (api != the_api) {
      *err = api->mprintf("%s", "another SQLite library registered first");
      return SQLITE_ERROR;
    }
    h = next_handle++;
    Registry()[h] = Conn{db, api};
  }
  const int rc = api->create_function_v2(db, "layerfs_pack_rows", 0, SQLITE_UTF8, reinterpret_cast<void*>(static_cast<intptr_t>(h)),
                                         HandleFn, nullptr, nullptr, Forget);
  if (rc != SQLITE_OK) Forget(reinterpret_cast<void*>(static_cast<intptr_t>(h)));
  return rc;
}

namespace layerfs {

namespace {

// What packRead answers besides a row's size.
constexpr double kNoRow = -1;      // no such row
constexpr double kOutside = -2;    // the range is not inside the row
constexpr double kNoHandle = -3;   // the connection is closed, or the handle was never given

double Integer(const Napi::Env& env, const Napi::Value& v, const char* what) {
  if (!v.IsNumber()) throw Napi::TypeError::New(env, std::string(what) + " must be a number");
  const double d = v.As<Napi::Number>().DoubleValue();
  if (!(d >= 0 && d <= 9007199254740991.0) || static_cast<double>(static_cast<int64_t>(d)) != d) {
    throw Napi::RangeError::New(env, std::string(what) + " must be a non-negative integer");
  }
  return d;
}

// packRead(handle, rowid, offset, length, out, outOffset): copies bytes [offset, offset +
// length) of packs row `rowid`'s data into out at outOffset and returns the row's size; or
// kNoRow, kOutside (nothing copied), kNoHandle. Other SQLite errors throw (code in .sqliteCode).
Napi::Value PackRead(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int64_t h = static_cast<int64_t>(Integer(env, info[0], "handle"));
  const int64_t rowid = static_cast<int64_t>(Integer(env, info[1], "rowid"));
  const double offset = Integer(env, info[2], "offset");
  const double length = Integer(env, info[3], "length");
  Bytes out = GetBytes(env, info[4], "out");
  const double out_off = Integer(env, info[5], "outOffset");
  if (out_off > static_cast<double>(out.size) || length > static_cast<double>(out.size) - out_off) {
    throw Napi::RangeError::New(env, "out is too small for the range");
  }
  Conn c{nullptr, nullptr};
  {
    std::lock_guard<std::mutex> lock(registry_mu);
    auto it = Registry().find(h);
    if (it == Registry().end()) return Napi::Number::New(env, kNoHandle);
    c = it->second;
  }
  sqlite3_blob* blob = nullptr;
  int rc = c.api->blob_open(c.db, "main", "packs", "data", rowid, 0, &blob);
  if (rc != SQLITE_OK) {
    const bool missing = blob == nullptr && c.api->extended_errcode(c.db) == SQLITE_ERROR;
    if (blob) c.api->blob_close(blob);
    if (missing) return Napi::Number::New(env, kNoRow);
    Napi::Error e = Napi::Error::New(env, std::string("pack row read: ") + c.api->errmsg(c.db));
    e.Set("sqliteCode", Napi::Number::New(env, rc));
    throw e;
  }
  const double size = c.api->blob_bytes(blob);
  if (offset > size || length > size - offset) {
    c.api->blob_close(blob);
    return Napi::Number::New(env, kOutside);
  }
  rc = length > 0 ? c.api->blob_read(blob, const_cast<uint8_t*>(out.data) + static_cast<size_t>(out_off), static_cast<int>(length),
                                     static_cast<int>(offset))
                  : SQLITE_OK;
  c.api->blob_close(blob);
  if (rc != SQLITE_OK) {
    Napi::Error e = Napi::Error::New(env, std::string("pack row read: ") + c.api->errstr(rc));
    e.Set("sqliteCode", Napi::Number::New(env, rc));
    throw e;
  }
  return Napi::Number::New(env, size);
}

// The path of this addon's file (what a connection's loadExtension is given).
std::string AddonPath() {
#ifdef _WIN32
  return "";
#else
  Dl_info dl{};
  if (dladdr(reinterpret_cast<void*>(&sqlite3_layerfspackrows_init), &dl) == 0 || !dl.dli_fname) return "";
  return dl.dli_fname;
#endif
}

}  // namespace

void InitPackRows(Napi::Env env, Napi::Object exports) {
  exports.Set("packRead", Napi::Function::New(env, PackRead, "packRead"));
  exports.Set("addonPath", AddonPath());
}

}  // namespace layerfs
