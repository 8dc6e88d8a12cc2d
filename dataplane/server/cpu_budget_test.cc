#include "dataplane/server/cpu_budget.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace keep::server {
namespace {

TEST(CpuBudgetTest, ParsesCpuMax) {
  EXPECT_FALSE(ParseCpuMax("max 100000").has_value());
  EXPECT_DOUBLE_EQ(*ParseCpuMax("250000 100000"), 2.5);
  EXPECT_DOUBLE_EQ(*ParseCpuMax("50000 100000"), 0.5);
  EXPECT_FALSE(ParseCpuMax("garbage").has_value());
  EXPECT_FALSE(ParseCpuMax("").has_value());
}

TEST(CpuBudgetTest, QuotaBelowAffinityWins) {
  CpuBudget b = ComputeBudget({0, 1, 2, 3, 4, 5, 6, 7}, 4.0, false, 8);
  EXPECT_EQ(b.budget, 4);
  EXPECT_FALSE(b.exclusive);
}

TEST(CpuBudgetTest, FractionalQuotaRoundsDownToAtLeastOne) {
  EXPECT_EQ(ComputeBudget({0, 1, 2, 3}, 2.5, false, 4).budget, 2);
  EXPECT_EQ(ComputeBudget({0, 1, 2, 3}, 0.5, false, 4).budget, 1);
}

TEST(CpuBudgetTest, StaticCpuManagerCpusetIsExclusive) {
  CpuBudget b = ComputeBudget({2, 3}, 2.0, false, 8);
  EXPECT_EQ(b.budget, 2);
  EXPECT_TRUE(b.exclusive);
  EXPECT_FALSE(ComputeBudget({0, 1, 2, 3}, std::nullopt, false, 4).exclusive);
}

TEST(CpuBudgetTest, ReadsNestedCgroupTree) {
  auto root = std::filesystem::temp_directory_path() / "keep_cpu_budget_test";
  std::filesystem::remove_all(root);
  std::filesystem::create_directories(root / "kubepods" / "pod1");
  std::ofstream(root / "cpu.max") << "max 100000\n";
  std::ofstream(root / "kubepods" / "cpu.max") << "300000 100000\n";
  std::ofstream(root / "kubepods" / "pod1" / "cpu.max") << "max 100000\n";
  std::ofstream(root / "cgroup") << "0::/kubepods/pod1\n";
  CpuBudget b = DetectCpuBudget(root.string(), (root / "cgroup").string());
  EXPECT_FALSE(b.cgroup_v1);
  ASSERT_TRUE(b.quota_cpus.has_value());
  EXPECT_DOUBLE_EQ(*b.quota_cpus, 3.0);
  EXPECT_LE(b.budget, 3);

  std::ofstream(root / "cgroup-v1") << "4:cpu,cpuacct:/docker/abc\n";
  EXPECT_TRUE(DetectCpuBudget(root.string(), (root / "cgroup-v1").string()).cgroup_v1);
  std::filesystem::remove_all(root);
}

}  // namespace
}  // namespace keep::server
