#include "operator/kube/informer.h"

#include <gtest/gtest.h>

#include <deque>

namespace keep::kube {
namespace {

using nlohmann::json;

json Obj(const std::string& name, const std::string& rv, int gen = 1) {
  return {{"metadata", {{"namespace", "ns"}, {"name", name}, {"resourceVersion", rv}}},
          {"spec", {{"gen", gen}}}};
}

// Scripted API: each List() pops a list result, each Watch() pops a script of events and an
// HTTP status; records the resourceVersion every watch started from.
class FakeListWatcher : public ListWatcher {
 public:
  struct WatchScript {
    int status = 200;
    std::vector<json> events;
  };
  std::deque<ListResult> lists;
  std::deque<WatchScript> watches;
  std::vector<std::string> watched_from;
  std::vector<int> timeouts;
  int list_calls = 0;

  ListResult List() override {
    ++list_calls;
    if (lists.empty()) return ListResult{500, json::array(), ""};
    ListResult r = lists.front();
    lists.pop_front();
    return r;
  }
  WatchResult Watch(const std::string& rv, int timeout_seconds,
                    const std::function<bool(const json&)>& on_event) override {
    watched_from.push_back(rv);
    timeouts.push_back(timeout_seconds);
    if (watches.empty()) return WatchResult{0, true};
    WatchScript s = watches.front();
    watches.pop_front();
    if (s.status != 200) return WatchResult{s.status, false};
    for (const auto& e : s.events) {
      if (!on_event(e)) break;
    }
    return WatchResult{200, false};
  }
};

struct Recorder {
  std::vector<std::pair<std::string, bool>> changes;  // key, present
  Informer::Handler fn() {
    return [this](const std::string& key, const json* obj) {
      changes.emplace_back(key, obj != nullptr);
    };
  }
};

TEST(Informer, ListsThenWatchesFromTheListVersion) {
  FakeListWatcher lw;
  lw.lists.push_back({200, json::array({Obj("a", "5"), Obj("b", "6")}), "10"});
  lw.watches.push_back({200,
                        {{{"type", "ADDED"}, {"object", Obj("c", "11")}},
                         {{"type", "MODIFIED"}, {"object", Obj("a", "12", 2)}},
                         {{"type", "DELETED"}, {"object", Obj("b", "13")}}}});
  Recorder rec;
  Informer inf(lw, rec.fn());
  EXPECT_FALSE(inf.synced());
  ASSERT_TRUE(inf.Step());
  EXPECT_TRUE(inf.synced());
  EXPECT_EQ(inf.resource_version(), "10");
  EXPECT_EQ(rec.changes.size(), 2u);
  ASSERT_TRUE(inf.Step());
  ASSERT_EQ(lw.watched_from, std::vector<std::string>{"10"});
  EXPECT_GE(lw.timeouts[0], 300);  // every watch carries a server-side timeout
  EXPECT_LT(lw.timeouts[0], 600);
  EXPECT_EQ(inf.resource_version(), "13");
  EXPECT_EQ(inf.Get("ns/a")->at("spec").at("gen"), 2);
  EXPECT_FALSE(inf.Get("ns/b"));
  EXPECT_TRUE(inf.Get("ns/c"));
  EXPECT_EQ(rec.changes.back(), std::make_pair(std::string("ns/b"), false));
}

TEST(Informer, BookmarkMovesTheVersionAndTheNextWatchResumesThere) {
  FakeListWatcher lw;
  lw.lists.push_back({200, json::array(), "1"});
  lw.watches.push_back(
      {200, {{{"type", "BOOKMARK"}, {"object", {{"metadata", {{"resourceVersion", "40"}}}}}}}});
  lw.watches.push_back({200, {}});  // server closed at its timeout: resume, do not relist
  Recorder rec;
  Informer inf(lw, rec.fn());
  ASSERT_TRUE(inf.Step());
  ASSERT_TRUE(inf.Step());
  EXPECT_TRUE(rec.changes.empty());
  ASSERT_TRUE(inf.Step());
  EXPECT_EQ(lw.watched_from, (std::vector<std::string>{"1", "40"}));
  EXPECT_EQ(lw.list_calls, 1);
}

TEST(Informer, InStreamGoneRelistsAndReportsWhatChangedMeanwhile) {
  FakeListWatcher lw;
  lw.lists.push_back({200, json::array({Obj("a", "5"), Obj("b", "6")}), "10"});
  lw.watches.push_back(
      {200,
       {{{"type", "ERROR"}, {"object", {{"kind", "Status"}, {"code", 410}, {"reason", "Expired"}}}},
        {{"type", "ADDED"}, {"object", Obj("never", "99")}}}});
  // While we were away: b deleted, a changed, d created.
  lw.lists.push_back({200, json::array({Obj("a", "20", 3), Obj("d", "21")}), "30"});
  lw.watches.push_back({200, {}});
  Recorder rec;
  Informer inf(lw, rec.fn());
  ASSERT_TRUE(inf.Step());
  rec.changes.clear();
  ASSERT_TRUE(inf.Step());  // ERROR 410: stops reading (the event after it is not applied)
  EXPECT_FALSE(inf.Get("ns/never"));
  ASSERT_TRUE(inf.Step());  // relist
  EXPECT_EQ(lw.list_calls, 2);
  EXPECT_EQ(inf.resource_version(), "30");
  EXPECT_FALSE(inf.Get("ns/b"));
  EXPECT_TRUE(inf.Get("ns/d"));
  std::map<std::string, bool> seen(rec.changes.begin(), rec.changes.end());
  EXPECT_EQ(seen, (std::map<std::string, bool>{{"ns/a", true}, {"ns/b", false}, {"ns/d", true}}));
  ASSERT_TRUE(inf.Step());
  EXPECT_EQ(lw.watched_from.back(), "30");
}

TEST(Informer, HttpGoneRelistsOtherFailuresBackOffAndResume) {
  FakeListWatcher lw;
  lw.lists.push_back({200, json::array(), "7"});
  lw.watches.push_back({500, {}});
  lw.watches.push_back({410, {}});
  lw.lists.push_back({200, json::array(), "50"});
  Recorder rec;
  Informer inf(lw, rec.fn());
  ASSERT_TRUE(inf.Step());
  EXPECT_FALSE(inf.Step());  // 500: back off, keep the version
  EXPECT_EQ(lw.list_calls, 1);
  EXPECT_TRUE(inf.Step());  // 410 from the same version: relist next
  EXPECT_EQ(lw.watched_from, (std::vector<std::string>{"7", "7"}));
  ASSERT_TRUE(inf.Step());
  EXPECT_EQ(lw.list_calls, 2);
  EXPECT_EQ(inf.resource_version(), "50");
}

TEST(Informer, FailedListIsNotSynced) {
  FakeListWatcher lw;
  lw.lists.push_back({403, json::array(), ""});
  Recorder rec;
  Informer inf(lw, rec.fn());
  EXPECT_FALSE(inf.Step());
  EXPECT_FALSE(inf.synced());
}

}  // namespace
}  // namespace keep::kube
