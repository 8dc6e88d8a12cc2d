#include <gtest/gtest.h>

#include "dataplane/commands/fake_services.h"
#include "dataplane/commands/test_fixture.h"

namespace keep::commands {
namespace {

class ConnectionFamilyTest : public CommandFixture {
 protected:
  ConnectionFamilyTest()
      : CommandFixture(1, {ConnectionCommands(), StringCommands(), KeyCommands()}) {
    set_services(&services_);
  }
  FakeServices services_;
};

TEST_F(ConnectionFamilyTest, Ping) {
  EXPECT_EQ(Run({"PING"}), "+PONG\r\n");
  EXPECT_EQ(Run({"ping", "hello"}), resp::Bulk("hello"));
  EXPECT_EQ(Run({"PING", "a", "b"}), resp::Err("ERR wrong number of arguments for 'ping' command"));
}

TEST_F(ConnectionFamilyTest, Echo) {
  EXPECT_EQ(Run({"ECHO", std::string("a\0b", 3)}), resp::Bulk(std::string("a\0b", 3)));
  EXPECT_EQ(Run({"ECHO"}), resp::Err("ERR wrong number of arguments for 'echo' command"));
}

TEST_F(ConnectionFamilyTest, HelloSwitchesProtocol) {
  std::string reply = Run({"HELLO", "3"});
  EXPECT_TRUE(reply.starts_with("%7\r\n$6\r\nserver\r\n$5\r\nredis\r\n")) << reply;
  EXPECT_NE(reply.find("$5\r\nproto\r\n:3\r\n"), std::string::npos);
  EXPECT_EQ(client().resp_version, 3);
  EXPECT_EQ(Run({"GET", "missing"}), "_\r\n");
  reply = Run({"HELLO", "2"});
  EXPECT_TRUE(reply.starts_with("*14\r\n")) << reply;
  EXPECT_EQ(Run({"GET", "missing"}), "$-1\r\n");
}

TEST_F(ConnectionFamilyTest, HelloErrors) {
  EXPECT_EQ(Run({"HELLO", "x"}),
            resp::Err("ERR Protocol version is not an integer or out of range"));
  EXPECT_EQ(Run({"HELLO", "4"}), resp::Err("NOPROTO unsupported protocol version"));
  EXPECT_EQ(Run({"HELLO", "1"}), resp::Err("NOPROTO unsupported protocol version"));
  EXPECT_EQ(Run({"HELLO", "3", "BOGUS"}), resp::Err("ERR Syntax error in HELLO option 'BOGUS'"));
  EXPECT_EQ(Run({"HELLO", "3", "SETNAME", "bad name"}),
            resp::Err("ERR Client names cannot contain spaces, newlines or special characters."));
  EXPECT_EQ(client().resp_version, 2);
  EXPECT_NE(Run({"HELLO", "3", "SETNAME", "worker-1"}).find("proto"), std::string::npos);
  EXPECT_EQ(client().name, "worker-1");
}

TEST_F(ConnectionFamilyTest, AuthWithoutPassword) {
  EXPECT_EQ(Run({"AUTH", "secret"}),
            resp::Err("ERR AUTH <password> called without any password configured for the "
                      "default user. Are you sure your configuration is correct?"));
  EXPECT_EQ(Run({"AUTH", "a", "b", "c"}), resp::Err("ERR syntax error"));
  EXPECT_EQ(Run({"AUTH", "default", "anything"}), "+OK\r\n");
  EXPECT_EQ(Run({"AUTH", "someone", "anything"}),
            resp::Err("WRONGPASS invalid username-password pair or user is disabled."));
}

TEST_F(ConnectionFamilyTest, AuthWithPassword) {
  limits().requirepass = "hunter2";
  client().authenticated = false;
  EXPECT_EQ(Run({"AUTH", "wrong"}),
            resp::Err("WRONGPASS invalid username-password pair or user is disabled."));
  EXPECT_FALSE(client().authenticated);
  EXPECT_EQ(Run({"HELLO", "3"}).substr(0, 7), "-NOAUTH");
  EXPECT_EQ(Run({"AUTH", "default", "hunter2"}), "+OK\r\n");
  EXPECT_TRUE(client().authenticated);
  client().authenticated = false;
  EXPECT_NE(Run({"HELLO", "3", "AUTH", "default", "hunter2"}).find("proto"), std::string::npos);
  EXPECT_TRUE(client().authenticated);
  EXPECT_EQ(Run({"RESET"}), "+RESET\r\n");
  EXPECT_FALSE(client().authenticated);
  EXPECT_EQ(client().resp_version, 2);
}

TEST_F(ConnectionFamilyTest, Select) {
  EXPECT_EQ(Run({"SELECT", "0"}), "+OK\r\n");
  EXPECT_EQ(Run({"SELECT", "1"}), resp::Err("ERR DB index is out of range"));
  EXPECT_EQ(Run({"SELECT", "x"}), resp::Err("ERR value is not an integer or out of range"));
}

TEST_F(ConnectionFamilyTest, QuitClosesAfterReply) {
  EXPECT_EQ(Run({"QUIT"}), "+OK\r\n");
  EXPECT_TRUE(client().close_after_reply);
}

TEST_F(ConnectionFamilyTest, ClientNames) {
  EXPECT_EQ(Run({"CLIENT", "GETNAME"}), "$-1\r\n");
  EXPECT_EQ(Run({"CLIENT", "SETNAME", "jobs"}), "+OK\r\n");
  EXPECT_EQ(Run({"CLIENT", "GETNAME"}), resp::Bulk("jobs"));
  EXPECT_EQ(Run({"CLIENT", "SETNAME", "a b"}),
            resp::Err("ERR Client names cannot contain spaces, newlines or special characters."));
  EXPECT_EQ(Run({"CLIENT", "ID"}), ":1\r\n");
}

TEST_F(ConnectionFamilyTest, ClientErrors) {
  EXPECT_EQ(Run({"CLIENT", "BOGUS"}),
            resp::Err("ERR unknown subcommand 'BOGUS'. Try CLIENT HELP."));
  EXPECT_EQ(Run({"CLIENT", "SETNAME"}),
            resp::Err("ERR wrong number of arguments for 'client|setname' command"));
  EXPECT_EQ(Run({"CLIENT", "ID", "extra"}),
            resp::Err("ERR wrong number of arguments for 'client|id' command"));
  EXPECT_EQ(Run({"CLIENT", "NO-EVICT", "maybe"}), resp::Err("ERR syntax error"));
  EXPECT_EQ(Run({"CLIENT"}), resp::Err("ERR wrong number of arguments for 'client' command"));
}

TEST_F(ConnectionFamilyTest, ClientListAndKill) {
  EXPECT_EQ(Run({"CLIENT", "LIST"}), resp::Bulk("id=1 addr=127.0.0.1:5000 name=\n"));
  EXPECT_EQ(Run({"CLIENT", "LIST", "TYPE", "pubsub"}), resp::Bulk(""));
  EXPECT_EQ(Run({"CLIENT", "LIST", "TYPE", "nope"}), resp::Err("ERR Unknown client type 'nope'"));
  EXPECT_EQ(Run({"CLIENT", "LIST", "ID", "x"}), resp::Err("ERR Invalid client ID"));
  EXPECT_EQ(Run({"CLIENT", "KILL", "127.0.0.1:5000"}), "+OK\r\n");
  EXPECT_EQ(Run({"CLIENT", "KILL", "127.0.0.1:9"}), resp::Err("ERR No such client"));
  EXPECT_EQ(Run({"CLIENT", "KILL", "ADDR", "127.0.0.1:5000", "SKIPME", "no"}), ":1\r\n");
  EXPECT_FALSE(services_.last_kill.skip_me);
  EXPECT_EQ(Run({"CLIENT", "KILL", "ID", "0"}),
            resp::Err("ERR client-id should be greater than 0"));
  // Three arguments are the old form, whatever the third one says (as in Redis).
  EXPECT_EQ(Run({"CLIENT", "KILL", "ADDR"}), resp::Err("ERR No such client"));
  EXPECT_EQ(Run({"CLIENT", "KILL", "ADDR", "1.2.3.4:5", "ID"}), resp::Err("ERR syntax error"));
}

TEST_F(ConnectionFamilyTest, ClientInfoIsVerbatimOnResp3) {
  EXPECT_EQ(Run({"CLIENT", "INFO"}), resp::Bulk("id=1 addr=127.0.0.1:5000 name=\n"));
  std::string text = "id=1 addr=127.0.0.1:5000 name=\n";
  EXPECT_EQ(RunResp3({"CLIENT", "INFO"}),
            "=" + std::to_string(text.size() + 4) + "\r\ntxt:" + text + "\r\n");
}

}  // namespace
}  // namespace keep::commands
