// File writer for exports and materialized Workspaces: the exporting thread decodes a file's
// content and hands it over (one memcpy) with its owner, mode and mtime; background threads
// create the file (O_CREAT | O_EXCL | O_NOFOLLOW), write it, set owner, mode and times on the
// open descriptor and close it. The kernel's work of creating many small files (inode and
// directory entry allocation, page-cache pages) then runs beside the next files' decode and on
// both cores. Pending bytes are bounded (a hand-over waits while the queue is full). The first
// failure (path, errno) is kept; later files are skipped and the failure is reported by the next
// hand-over or by the drain, never dropped.
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "napi_util.h"

namespace layerfs {

namespace {

struct FreeDeleter {
  void operator()(uint8_t* p) const { std::free(p); }
};

struct FileJob {
  std::string path;
  std::unique_ptr<uint8_t, FreeDeleter> data;
  size_t len = 0;
  uint32_t mode = 0;
  uint32_t uid = 0;
  uint32_t gid = 0;
  bool chown = false;
  struct timespec mtime = {0, 0};
};

// Writes all of [data, data + len) at the descriptor's position; 0 or errno.
int WriteAll(int fd, const uint8_t* data, size_t len) {
  size_t done = 0;
  while (done < len) {
    const ssize_t n = write(fd, data + done, len - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return n < 0 ? errno : EIO;
    done += static_cast<size_t>(n);
  }
  return 0;
}

// Creates, writes and closes one file with its metadata; 0 or errno. Owner before mode (a
// chown clears set-id bits), times last. Only root may give a file away: EPERM keeps the caller.
int WriteFile(const FileJob& job) {
  int fd;
  do fd = open(job.path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  while (fd < 0 && errno == EINTR);
  if (fd < 0) return errno;
  int err = WriteAll(fd, job.data.get(), job.len);
  if (err == 0 && job.chown && fchown(fd, job.uid, job.gid) != 0 && errno != EPERM) err = errno;
  if (err == 0 && fchmod(fd, job.mode & 07777) != 0) err = errno;
  const struct timespec times[2] = {job.mtime, job.mtime};
  if (err == 0 && futimens(fd, times) != 0) err = errno;
  if (close(fd) != 0 && err == 0 && errno != EINTR) err = errno;
  return err;
}

class FileWriter {
 public:
  FileWriter(int threads, size_t limit) : limit_(limit) {
    for (int i = 0; i < threads; i++) threads_.emplace_back([this] { Run(); });
  }

  ~FileWriter() { Stop(); }

  // Queues job (its bytes copied already); false when a failure is waiting to be reported (then
  // nothing is queued).
  bool Put(FileJob&& job) {
    std::unique_lock<std::mutex> lock(mu_);
    space_.wait(lock, [&] { return error_ != 0 || bytes_ == 0 || bytes_ + job.len <= limit_; });
    if (error_ != 0) return false;
    bytes_ += job.len;
    queue_.push_back(std::move(job));
    work_.notify_one();
    return true;
  }

  // Waits until every queued file is written; 0, or the errno of the first failure (its path in *path).
  int Drain(std::string* path) {
    std::unique_lock<std::mutex> lock(mu_);
    done_.wait(lock, [&] { return queue_.empty() && busy_ == 0; });
    *path = error_path_;
    return error_;
  }

  bool Closed() {
    std::lock_guard<std::mutex> lock(mu_);
    return stop_;
  }

  // Waits for the queue, then ends the threads.
  void Stop() {
    {
      std::unique_lock<std::mutex> lock(mu_);
      done_.wait(lock, [&] { return queue_.empty() && busy_ == 0; });
      stop_ = true;
      work_.notify_all();
    }
    for (auto& t : threads_) t.join();
    threads_.clear();
  }

 private:
  void Run() {
    pthread_setname_np(pthread_self(), "layerfs-export");  // ps -L, /proc/<pid>/task/*/comm
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      work_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;
      FileJob job = std::move(queue_.front());
      queue_.pop_front();
      const bool skip = error_ != 0;
      busy_++;
      lock.unlock();
      const int err = skip ? 0 : WriteFile(job);
      const size_t len = job.len;
      job.data.reset();
      lock.lock();
      busy_--;
      bytes_ -= len;
      if (err != 0 && error_ == 0) {
        error_ = err;
        error_path_ = job.path;
      }
      space_.notify_all();
      if (queue_.empty() && busy_ == 0) done_.notify_all();
    }
  }

  const size_t limit_;
  std::mutex mu_;
  std::condition_variable work_, space_, done_;
  std::deque<FileJob> queue_;
  std::vector<std::thread> threads_;
  size_t bytes_ = 0;
  int busy_ = 0;
  bool stop_ = false;
  int error_ = 0;
  std::string error_path_;
};

FileWriter* GetWriter(const Napi::Env& env, const Napi::Value& v) {
  if (!v.IsExternal()) throw Napi::TypeError::New(env, "writer must be a file writer");
  FileWriter* w = v.As<Napi::External<FileWriter>>().Data();
  if (w == nullptr || w->Closed()) throw Napi::Error::New(env, "the file writer is closed");
  return w;
}

// fileWriterOpen(threads, limitBytes) -> a writer (freed when collected; fileWriterClose ends its threads).
Napi::Value Open(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int threads = info[0].IsNumber() ? info[0].As<Napi::Number>().Int32Value() : 2;
  const double limit = info[1].IsNumber() ? info[1].As<Napi::Number>().DoubleValue() : 64.0 * 1048576;
  if (threads < 1 || threads > 64) throw Napi::RangeError::New(env, "threads must be 1-64");
  if (!(limit >= 1 && limit <= 1099511627776.0)) throw Napi::RangeError::New(env, "limit must be 1 byte to 1 TiB");
  auto* w = new FileWriter(threads, static_cast<size_t>(limit));
  return Napi::External<FileWriter>::New(env, w, [](Napi::Env, FileWriter* p) { delete p; });
}

// fileWriterPut(writer, path, pieces, mode, uid, gid, mtimeNs, chown) -> true once queued,
// false when an earlier file failed (fileWriterDrain reports it).
Napi::Value Put(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  FileWriter* w = GetWriter(env, info[0]);
  FileJob job;
  job.path = GetPath(env, info[1], "path");
  if (!info[2].IsArray()) throw Napi::TypeError::New(env, "pieces must be an array of Uint8Array");
  auto pieces = info[2].As<Napi::Array>();
  std::vector<Bytes> parts;
  for (uint32_t i = 0; i < pieces.Length(); i++) {
    parts.push_back(GetBytes(env, pieces.Get(i), "piece"));
    job.len += parts.back().size;
  }
  if (!info[3].IsNumber() || !info[4].IsNumber() || !info[5].IsNumber()) throw Napi::TypeError::New(env, "mode, uid and gid must be numbers");
  job.mode = info[3].As<Napi::Number>().Uint32Value();
  job.uid = info[4].As<Napi::Number>().Uint32Value();
  job.gid = info[5].As<Napi::Number>().Uint32Value();
  if (!info[6].IsBigInt()) throw Napi::TypeError::New(env, "mtimeNs must be a bigint");
  bool lossless = false;
  const int64_t ns = info[6].As<Napi::BigInt>().Int64Value(&lossless);
  job.mtime.tv_sec = ns / 1000000000;
  job.mtime.tv_nsec = ns % 1000000000;
  if (job.mtime.tv_nsec < 0) {
    job.mtime.tv_sec -= 1;
    job.mtime.tv_nsec += 1000000000;
  }
  job.chown = info[7].ToBoolean().Value();
  if (job.len > 0) {
    job.data.reset(static_cast<uint8_t*>(std::malloc(job.len)));
    if (!job.data) throw Napi::Error::New(env, "out of memory for a file of the export");
    size_t at = 0;
    for (const Bytes& b : parts) {
      std::memcpy(job.data.get() + at, b.data, b.size);
      at += b.size;
    }
  }
  return Napi::Boolean::New(env, w->Put(std::move(job)));
}

// fileWriterDrain(writer) -> null once every queued file is written, or [path, errno] of the first failure.
Napi::Value Drain(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::string path;
  const int err = GetWriter(env, info[0])->Drain(&path);
  if (err == 0) return env.Null();
  auto out = Napi::Array::New(env, 2);
  out.Set(0u, Napi::Buffer<char>::Copy(env, path.data(), path.size()));
  out.Set(1u, Napi::Number::New(env, err));
  return out;
}

// fileWriterClose(writer) -> undefined: waits for the queue, then ends the writer's threads.
Napi::Value Close(const Napi::CallbackInfo& info) {
  GetWriter(info.Env(), info[0])->Stop();
  return info.Env().Undefined();
}

}  // namespace

void InitFileWriter(Napi::Env env, Napi::Object exports) {
  exports.Set("fileWriterOpen", Napi::Function::New<Open>(env, "fileWriterOpen"));
  exports.Set("fileWriterPut", Napi::Function::New<Put>(env, "fileWriterPut"));
  exports.Set("fileWriterDrain", Napi::Function::New<Drain>(env, "fileWriterDrain"));
  exports.Set("fileWriterClose", Napi::Function::New<Close>(env, "fileWriterClose"));
}

}  // namespace layerfs
