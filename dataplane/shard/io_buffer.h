// A byte buffer that grows without zero-filling, so filling it costs only the copy: socket input
// (the kernel's copy) and the requests a shard forwards to another (Shard::Forward).
#pragma once

#include <cstddef>
#include <cstring>
#include <memory>
#include <string_view>

namespace keep::shard {

class IoBuffer {
 public:
  std::string_view readable() const { return {data_.get() + begin_, end_ - begin_}; }
  size_t size() const { return end_ - begin_; }
  bool empty() const { return begin_ == end_; }
  size_t capacity() const { return capacity_; }

  void Clear() { begin_ = end_ = 0; }

  void Consume(size_t n) {
    begin_ += n;
    if (begin_ == end_) begin_ = end_ = 0;
  }

  // Returns room for at least `n` more bytes at the end.
  char* PrepareWrite(size_t n) {
    if (capacity_ - end_ < n) {
      size_t used = end_ - begin_;
      if (capacity_ - used >= n && begin_ > 0) {
        std::memmove(data_.get(), data_.get() + begin_, used);
      } else {
        size_t grown = capacity_ * 2;
        if (grown < used + n) grown = used + n;
        auto bigger = std::make_unique_for_overwrite<char[]>(grown);
        if (used > 0) std::memcpy(bigger.get(), data_.get() + begin_, used);
        data_ = std::move(bigger);
        capacity_ = grown;
      }
      begin_ = 0;
      end_ = used;
    }
    return data_.get() + end_;
  }
  size_t writable() const { return capacity_ - end_; }
  void Commit(size_t n) { end_ += n; }

  void Append(std::string_view bytes) {
    std::memcpy(PrepareWrite(bytes.size()), bytes.data(), bytes.size());
    Commit(bytes.size());
  }

  // Gives memory back once a large request is done.
  void ShrinkIfEmpty(size_t keep_capacity) {
    if (empty() && capacity_ > keep_capacity) {
      data_.reset();
      capacity_ = begin_ = end_ = 0;
    }
  }

 private:
  std::unique_ptr<char[]> data_;
  size_t begin_ = 0;
  size_t end_ = 0;
  size_t capacity_ = 0;
};

}  // namespace keep::shard
