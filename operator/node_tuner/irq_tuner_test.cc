#include "operator/node_tuner/irq_tuner.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace keep::tuner {
namespace {

namespace fs = std::filesystem;

// A host with 8 CPUs, a NIC eth0 with 4 receive queues (IRQs 40-43) plus its link IRQ (39),
// an unrelated disk IRQ (20), and a Keep pod whose container is pinned to CPUs 2-3.
class FakeHost : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("irq_tuner_test_" + std::to_string(getpid()));
    fs::remove_all(root_);
    roots_.proc = (root_ / "proc").string();
    roots_.sys = (root_ / "sys").string();
    roots_.state_dir = (root_ / "state").string();
    Put("sys/devices/system/cpu/online", "0-7");
    fs::create_directories(root_ / "sys/class/net/eth0/device");
    fs::create_directories(root_ / "sys/class/net/lo");
    Put("proc/interrupts",
        "            CPU0       CPU1\n"
        "  20:         10          0   PCI-MSI 1-edge      nvme0q0\n"
        "  39:          1          0   PCI-MSI 2-edge      eth0\n"
        "  40:        100          0   PCI-MSI 3-edge      eth0-rx-0\n"
        "  41:        100          0   PCI-MSI 4-edge      eth0-rx-1\n"
        "  42:        100          0   PCI-MSI 5-edge      eth0-rx-2\n"
        "  43:        100          0   PCI-MSI 6-edge      eth0-rx-3\n"
        "  44:        100          0   PCI-MSI 7-edge      eth0-tx-0\n"
        " NMI:          0          0   Non-maskable interrupts\n");
    for (int irq : {20, 39, 40, 41, 42, 43, 44}) Put(Irq(irq), "0-7");
    Put("sys/fs/cgroup/kubepods.slice/kubepods-pod1234_abcd.slice/"
        "cri-containerd-c0ffee.scope/cpuset.cpus.effective",
        "2-3");
    Put("sys/fs/cgroup/kubepods.slice/kubepods-pod1234_abcd.slice/"
        "cri-containerd-pause.scope/cpuset.cpus.effective",
        "0-1,4-7");
  }
  void TearDown() override { fs::remove_all(root_); }

  void Put(const std::string& rel, const std::string& text) {
    fs::create_directories((root_ / rel).parent_path());
    std::ofstream(root_ / rel) << text << "\n";
  }
  std::string Get(const std::string& rel) {
    std::ifstream in(root_ / rel);
    std::string s;
    std::getline(in, s);
    return s;
  }
  static std::string Irq(int n) { return "proc/irq/" + std::to_string(n) + "/smp_affinity_list"; }

  fs::path root_;
  Roots roots_;
};

TEST(CpuList, ParsesAndFormats) {
  EXPECT_EQ(ParseCpuList("0-3,8"), (std::set<int>{0, 1, 2, 3, 8}));
  EXPECT_EQ(ParseCpuList(" 5 "), (std::set<int>{5}));
  EXPECT_EQ(ParseCpuList(""), std::set<int>{});
  EXPECT_FALSE(ParseCpuList("3-1"));
  EXPECT_FALSE(ParseCpuList("a"));
  EXPECT_FALSE(ParseCpuList("1-2x"));
  EXPECT_EQ(FormatCpuList({0, 1, 2, 3, 8, 10, 11}), "0-3,8,10-11");
  EXPECT_EQ(FormatCpuList({}), "");
}

TEST_F(FakeHost, FindsReceiveQueuesInOrder) {
  EXPECT_EQ(FindQueueIrqs(roots_, "eth0"), (std::vector<int>{40, 41, 42, 43}));
  EXPECT_EQ(FindQueueIrqs(roots_, ""), (std::vector<int>{40, 41, 42, 43}));  // lo has no device
  EXPECT_TRUE(FindQueueIrqs(roots_, "eth1").empty());
}

TEST_F(FakeHost, FindsTheContainersCpuset) {
  EXPECT_EQ(FindContainerCpus(roots_, {"1234-abcd", "c0ffee"}), (std::set<int>{2, 3}));
  EXPECT_FALSE(FindContainerCpus(roots_, {"9999", "c0ffee"}));
  EXPECT_FALSE(FindContainerCpus(roots_, {"1234-abcd", "missing"}));
}

TEST_F(FakeHost, OntoPutsOneQueuePerShardCpuAndTheRestAwayThenRestores) {
  auto cpus = FindContainerCpus(roots_, {"1234-abcd", "c0ffee"});
  ASSERT_TRUE(cpus);
  TuneResult r = Tune(roots_, "eth0", "onto", *cpus);
  EXPECT_TRUE(r.errors.empty());
  EXPECT_EQ(Get(Irq(40)), "2");
  EXPECT_EQ(Get(Irq(41)), "3");
  EXPECT_EQ(Get(Irq(42)), "0-1,4-7");
  EXPECT_EQ(Get(Irq(43)), "0-1,4-7");
  EXPECT_EQ(Get(Irq(39)), "0-7");  // link and transmit IRQs and other devices untouched
  EXPECT_EQ(Get(Irq(44)), "0-7");
  EXPECT_EQ(Get(Irq(20)), "0-7");
  EXPECT_EQ(r.written.size(), 4u);
  // Idempotent: nothing to write the second time.
  EXPECT_TRUE(Tune(roots_, "eth0", "onto", *cpus).written.empty());
  // Something else (irqbalance) moved one back: re-applied.
  Put(Irq(41), "0-7");
  EXPECT_EQ(Tune(roots_, "eth0", "onto", *cpus).written, (std::map<int, std::string>{{41, "3"}}));
  // The pod went away: the original affinity comes back and the state is dropped.
  r = Tune(roots_, "eth0", "onto", {});
  EXPECT_EQ(r.written.size(), 4u);
  for (int irq : {40, 41, 42, 43}) EXPECT_EQ(Get(Irq(irq)), "0-7") << irq;
  EXPECT_FALSE(fs::exists(root_ / "state/saved-affinity.json"));
  EXPECT_TRUE(Tune(roots_, "eth0", "onto", {}).written.empty());
}

TEST_F(FakeHost, AwayKeepsEveryQueueOffTheShardCpus) {
  Put(Irq(42), "1");  // a previous, non-default affinity is what gets restored
  Tune(roots_, "eth0", "away", {2, 3});
  for (int irq : {40, 41, 42, 43}) EXPECT_EQ(Get(Irq(irq)), "0-1,4-7") << irq;
  // Survives a tuner restart: the saved state is on disk, not in memory.
  Tune(roots_, "eth0", "away", {});
  EXPECT_EQ(Get(Irq(40)), "0-7");
  EXPECT_EQ(Get(Irq(42)), "1");
}

TEST_F(FakeHost, UnwritableIrqIsReportedNotFatal) {
  fs::remove_all(root_ / "proc/irq/43");
  TuneResult r = Tune(roots_, "eth0", "away", {2, 3});
  EXPECT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(Get(Irq(40)), "0-1,4-7");
}

}  // namespace
}  // namespace keep::tuner
