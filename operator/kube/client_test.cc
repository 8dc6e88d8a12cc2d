// The REST client and informer against a local HTTP server (cpprest's listener on loopback)
// standing in for the API server: requests, headers, server-side apply, and a watch stream
// read line by line through bookmarks and an in-stream 410.
#include <cpprest/http_listener.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <mutex>
#include <random>

#include "operator/kube/client.h"
#include "operator/kube/informer.h"

namespace keep::kube {
namespace {

using web::http::experimental::listener::http_listener;

struct Seen {
  std::string method, path, query, auth, content_type, body;
};

class FakeApiServer {
 public:
  FakeApiServer() {
    std::mt19937 rng(static_cast<unsigned>(getpid()));
    for (int attempt = 0; attempt < 20 && !listener_; ++attempt) {
      port_ = 20000 + static_cast<int>(rng() % 30000);
      auto l = std::make_unique<http_listener>("http://127.0.0.1:" + std::to_string(port_));
      l->support([this](web::http::http_request req) { Handle(req); });
      try {
        l->open().wait();
        listener_ = std::move(l);
      } catch (const std::exception&) {
      }
    }
  }
  ~FakeApiServer() {
    if (listener_) listener_->close().wait();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::vector<Seen> seen() {
    std::lock_guard lock(mu_);
    return seen_;
  }

 private:
  void Handle(web::http::http_request req) {
    Seen s;
    s.method = req.method();
    s.path = req.relative_uri().path();
    s.query = req.relative_uri().query();
    if (req.headers().has("Authorization")) s.auth = req.headers()["Authorization"];
    s.content_type = req.headers().content_type();
    s.body = req.extract_utf8string(true).get();
    {
      std::lock_guard lock(mu_);
      seen_.push_back(s);
    }
    const std::string list_path = "/api/v1/namespaces/ns/configmaps";
    if (s.path == list_path && s.query.find("watch=1") == std::string::npos) {
      req.reply(200, R"({"kind":"ConfigMapList","metadata":{"resourceVersion":"5"},
                         "items":[{"metadata":{"name":"a","namespace":"ns","resourceVersion":"4"}}]})",
                "application/json");
    } else if (s.path == list_path && s.query.find("resourceVersion=5") != std::string::npos) {
      req.reply(
          200,
          R"({"type":"ADDED","object":{"metadata":{"name":"b","namespace":"ns","resourceVersion":"6"}}})"
          "\n"
          R"({"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"9"}}})"
          "\n",
          "application/json");
    } else if (s.path == list_path && s.query.find("resourceVersion=9") != std::string::npos) {
      req.reply(200,
                R"({"type":"ERROR","object":{"kind":"Status","code":410,"reason":"Expired"}})"
                "\n",
                "application/json");
    } else if (s.method == "PATCH") {
      req.reply(200, s.body, "application/json");
    } else if (s.path == "/api/v1/namespaces/ns/configmaps/missing") {
      req.reply(404, R"({"kind":"Status","code":404,"message":"configmaps \"missing\" not found"})",
                "application/json");
    } else {
      req.reply(500, "not json", "text/plain");
    }
  }

  std::unique_ptr<http_listener> listener_;
  int port_ = 0;
  std::mutex mu_;
  std::vector<Seen> seen_;
};

TEST(Client, RequestsCarryTheTokenFromItsFile) {
  FakeApiServer server;
  std::string token_file = "/tmp/client_test_token_" + std::to_string(getpid());
  std::ofstream(token_file) << "tok-1\n";
  ClusterConfig cfg;
  cfg.server = server.url();
  cfg.token_file = token_file;
  Client client(cfg, std::chrono::seconds(5));
  Response missing = client.Get("/api/v1/namespaces/ns/configmaps/missing");
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(missing.error, "configmaps \"missing\" not found");
  Response bad = client.Get("/other");
  EXPECT_EQ(bad.status, 500);
  EXPECT_TRUE(bad.body.is_object());  // not JSON: reads as empty, never throws
  EXPECT_EQ(bad.error, "not json");
  auto seen = server.seen();
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].auth, "Bearer tok-1");
  unlink(token_file.c_str());
}

TEST(Client, ApplyIsAForcedApplyPatchWithTheFieldManager) {
  FakeApiServer server;
  ClusterConfig cfg;
  cfg.server = server.url();
  cfg.token = "static";
  Client client(cfg, std::chrono::seconds(5));
  Json cm = {{"apiVersion", "v1"},
             {"kind", "ConfigMap"},
             {"metadata", {{"name", "x"}, {"namespace", "ns"}}}};
  Response r = client.Apply(ResourcePath("v1", "configmaps", "ns", "x"), cm, "keep-operator");
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.body["metadata"]["name"], "x");
  auto seen = server.seen();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].method, "PATCH");
  EXPECT_EQ(seen[0].path, "/api/v1/namespaces/ns/configmaps/x");
  EXPECT_EQ(seen[0].query, "fieldManager=keep-operator&force=true");
  EXPECT_EQ(seen[0].content_type, "application/apply-patch+yaml");
  EXPECT_EQ(seen[0].auth, "Bearer static");
  EXPECT_EQ(Json::parse(seen[0].body), cm);
}

TEST(Client, InformerListsWatchesThroughABookmarkAndRelistsOnGone) {
  FakeApiServer server;
  ClusterConfig cfg;
  cfg.server = server.url();
  Client client(cfg, std::chrono::seconds(5));
  ApiListWatcher lw(client, ResourcePath("v1", "configmaps", "ns"), "app=x");
  std::vector<std::string> changes;
  Informer inf(lw, [&](const std::string& key, const Json*) { changes.push_back(key); });
  ASSERT_TRUE(inf.Step());  // list
  ASSERT_TRUE(inf.Step());  // watch from 5: ADDED b, BOOKMARK 9, server closes
  EXPECT_EQ(inf.resource_version(), "9");
  ASSERT_TRUE(inf.Step());  // watch from 9: ERROR 410
  ASSERT_TRUE(inf.Step());  // relist
  EXPECT_EQ(inf.relists(), 2);
  EXPECT_EQ(changes, (std::vector<std::string>{"ns/a", "ns/b", "ns/b"}));  // b gone on relist
  auto seen = server.seen();
  ASSERT_EQ(seen.size(), 4u);
  EXPECT_EQ(seen[0].query, "labelSelector=app%3Dx");
  EXPECT_NE(
      seen[1].query.find("watch=1&allowWatchBookmarks=true&resourceVersion=5&timeoutSeconds="),
      std::string::npos);
  EXPECT_NE(seen[1].query.find("labelSelector=app%3Dx"), std::string::npos);
  EXPECT_NE(seen[2].query.find("resourceVersion=9"), std::string::npos);
}

}  // namespace
}  // namespace keep::kube
