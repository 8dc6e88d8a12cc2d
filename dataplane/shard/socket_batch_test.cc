#include "dataplane/shard/socket_batch.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <string_view>
#include <vector>

namespace keep::shard {
namespace {

struct SocketPair {
  int fds[2] = {-1, -1};
  SocketPair() {
    EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds), 0);
  }
  ~SocketPair() {
    for (int fd : fds) {
      if (fd >= 0) close(fd);
    }
  }
};

// Every test runs on io_uring (where the kernel allows it) and on plain system calls.
class SocketBatchTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    if (GetParam() && !batch_.io_uring()) GTEST_SKIP() << "the kernel refuses io_uring here";
    if (!GetParam()) {
      ASSERT_FALSE(batch_.io_uring());
    }
  }
  SocketBatch batch_{64, GetParam()};
};

TEST_P(SocketBatchTest, SendsAndReceivesInOrder) {
  std::vector<SocketPair> pairs(8);
  for (size_t i = 0; i < pairs.size(); ++i) {
    static const std::string kMessages[] = {"one", "two!", "three", "four!!"};
    const std::string& message = kMessages[i % 4];
    batch_.Send(pairs[i].fds[0], message.data(), message.size());
  }
  std::span<const ssize_t> sent = batch_.Run();
  ASSERT_EQ(sent.size(), 8u);
  for (size_t i = 0; i < sent.size(); ++i) EXPECT_EQ(sent[i], static_cast<ssize_t>(3 + i % 4));

  std::vector<std::string> buffers(8, std::string(16, '\0'));
  for (size_t i = 0; i < pairs.size(); ++i) {
    batch_.Recv(pairs[i].fds[1], buffers[i].data(), buffers[i].size());
  }
  std::span<const ssize_t> received = batch_.Run();
  ASSERT_EQ(received.size(), 8u);
  EXPECT_EQ(buffers[0].substr(0, received[0]), "one");
  EXPECT_EQ(buffers[1].substr(0, received[1]), "two!");
  EXPECT_EQ(buffers[6].substr(0, received[6]), "three");
  EXPECT_EQ(buffers[7].substr(0, received[7]), "four!!");
  EXPECT_EQ(batch_.size(), 0u);
}

TEST_P(SocketBatchTest, NothingToReadIsEagainNotAWait) {
  SocketPair idle;
  SocketPair closed;
  close(closed.fds[0]);
  closed.fds[0] = -1;
  char a[8];
  char b[8];
  batch_.Recv(idle.fds[1], a, sizeof a);
  batch_.Recv(closed.fds[1], b, sizeof b);
  std::span<const ssize_t> results = batch_.Run();
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0], -EAGAIN);
  EXPECT_EQ(results[1], 0);  // end of stream
}

TEST_P(SocketBatchTest, FullSocketIsEagainAndBrokenPipeIsAnError) {
  SocketPair full;
  const std::string chunk(64 * 1024, 'x');
  ssize_t last = 1;
  for (int i = 0; i < 1000 && last > 0; ++i) {
    batch_.Send(full.fds[0], chunk.data(), chunk.size());
    last = batch_.Run()[0];
  }
  EXPECT_EQ(last, -EAGAIN);

  SocketPair broken;
  close(broken.fds[1]);
  broken.fds[1] = -1;
  batch_.Send(broken.fds[0], "x", 1);  // no SIGPIPE: the test would die of it
  EXPECT_EQ(batch_.Run()[0], -EPIPE);
}

TEST_P(SocketBatchTest, OneSystemCallPerBatchWithIoUring) {
  std::vector<SocketPair> pairs(32);
  for (SocketPair& pair : pairs) batch_.Send(pair.fds[0], "ping", 4);
  const uint64_t before = batch_.system_calls();
  EXPECT_EQ(batch_.Run().size(), 32u);
  EXPECT_EQ(batch_.system_calls() - before, batch_.io_uring() ? 1u : 32u);
  EXPECT_TRUE(batch_.Run().empty());  // nothing queued: nothing done
}

TEST_P(SocketBatchTest, OneOperationIsOneSystemCallOnEitherBackend) {
  SocketPair pair;
  batch_.Send(pair.fds[0], "ping", 4);
  const uint64_t before = batch_.system_calls();
  EXPECT_EQ(batch_.Run()[0], 4);
  EXPECT_EQ(batch_.system_calls() - before, 1u);
  char buffer[8];
  batch_.Recv(pair.fds[1], buffer, sizeof(buffer));
  EXPECT_EQ(batch_.Run()[0], 4);
  EXPECT_EQ(std::string_view(buffer, 4), "ping");
  batch_.Recv(pair.fds[1], buffer, sizeof(buffer));
  EXPECT_EQ(batch_.Run()[0], -EAGAIN);
  // The ring is still there for the next batch of several.
  EXPECT_EQ(batch_.io_uring(), GetParam());
}

INSTANTIATE_TEST_SUITE_P(Backends, SocketBatchTest, ::testing::Values(true, false),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "IoUring" : "PlainCalls";
                         });

}  // namespace
}  // namespace keep::shard
