// Blobs read straight into a caller's buffer. The addon is also a SQLite loadable extension:
// lib/store loads it into a connection (better-sqlite3's loadExtension), and its entry point
// registers that connection and its API table (the very SQLite library that connection runs on:
// nothing here links SQLite, so no second copy of SQLite ever holds locks on a Store file).
// blobRead then reads a stretch of one blob through SQLite's incremental blob I/O, in that
// connection's transaction, into a caller's buffer: no value assembled by SQLite, no Buffer per
// read. The table and column are the caller's (the addon knows no schema). A connection is used
// only on the thread that owns it (better-sqlite3's rule); the registry is shared by the threads.
#ifndef _WIN32
#include <dlfcn.h>
#define LAYERFS_EXPORT __attribute__((visibility("default")))
#else
#define LAYERFS_EXPORT __declspec(dllexport)
#endif

#include <cstdint>
#include <cstring>
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
// reads with SELECT.
const sqlite3_api_routines* the_api = nullptr;

// SELECT layerfs_blob_handle(): the connection's handle (the function's user data).
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
extern "C" LAYERFS_EXPORT int sqlite3_layerfsblobs_init(sqlite3* db, char** err,
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
  const int rc = api->create_function_v2(db, "layerfs_blob_handle", 0, SQLITE_UTF8, reinterpret_cast<void*>(static_cast<intptr_t>(h)),
                                         HandleFn, nullptr, nullptr, Forget);
  if (rc != SQLITE_OK) Forget(reinterpret_cast<void*>(static_cast<intptr_t>(h)));
  return rc;
}

namespace layerfs {

namespace {

// What blobRead answers besides a blob's size.
constexpr double kNoRow = -1;      // no such row (or no blob in it)
constexpr double kOutside = -2;    // the range is not inside the blob
constexpr double kNoHandle = -3;   // the connection is closed, or the handle was never given

double Integer(const Napi::Env& env, const Napi::Value& v, const char* what) {
  if (!v.IsNumber()) throw Napi::TypeError::New(env, std::string(what) + " must be a number");
  const double d = v.As<Napi::Number>().DoubleValue();
  if (!(d >= 0 && d <= 9007199254740991.0) || static_cast<double>(static_cast<int64_t>(d)) != d) {
    throw Napi::RangeError::New(env, std::string(what) + " must be a non-negative integer");
  }
  return d;
}

std::string Text(const Napi::Env& env, const Napi::Value& v, const char* what) {
  if (!v.IsString()) throw Napi::TypeError::New(env, std::string(what) + " must be a string");
  return v.As<Napi::String>().Utf8Value();
}

// blobRead(handle, table, column, rowid, offset, length, out, outOffset): copies bytes [offset,
// offset + length) of `column` of row `rowid` of `table` (main schema) into out at outOffset and
// returns the blob's size; or kNoRow, kOutside (nothing copied), kNoHandle. Other SQLite errors
// throw (their code in .sqliteCode).
Napi::Value BlobRead(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int64_t h = static_cast<int64_t>(Integer(env, info[0], "handle"));
  const std::string table = Text(env, info[1], "table");
  const std::string column = Text(env, info[2], "column");
  const int64_t rowid = static_cast<int64_t>(Integer(env, info[3], "rowid"));
  const double offset = Integer(env, info[4], "offset");
  const double length = Integer(env, info[5], "length");
  Bytes out = GetBytes(env, info[6], "out");
  const double out_off = Integer(env, info[7], "outOffset");
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
  int rc = c.api->blob_open(c.db, "main", table.c_str(), column.c_str(), rowid, 0, &blob);
  if (rc != SQLITE_OK) {
    // SQLite says "no such rowid: N" for a missing row; anything else (no such table, column,
    // a value that is not a blob) is an error of the caller or of the file.
    const char* msg = c.api->errmsg(c.db);
    const bool missing = rc == SQLITE_ERROR && msg && std::strncmp(msg, "no such rowid", 13) == 0;
    if (blob) c.api->blob_close(blob);
    if (missing) return Napi::Number::New(env, kNoRow);
    Napi::Error e = Napi::Error::New(env, std::string("blob read: ") + c.api->errmsg(c.db));
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
    Napi::Error e = Napi::Error::New(env, std::string("blob read: ") + c.api->errstr(rc));
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
  if (dladdr(reinterpret_cast<void*>(&sqlite3_layerfsblobs_init), &dl) == 0 || !dl.dli_fname) return "";
  return dl.dli_fname;
#endif
}

}  // namespace

void InitBlobs(Napi::Env env, Napi::Object exports) {
  exports.Set("blobRead", Napi::Function::New(env, BlobRead, "blobRead"));
  exports.Set("addonPath", AddonPath());
}

}  // namespace layerfs
