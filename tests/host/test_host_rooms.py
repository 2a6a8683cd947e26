#!/usr/bin/env python3
"""tests/host/test_host_rooms.py — what tools/check_host_rooms.py refuses, on small trees.

Run by CTest (tests/host/CMakeLists.txt, host.rooms_checker); host.rooms runs the
checker itself on host/. Each case writes a tree laid out like host/ and checks
that the checker fails on it naming the file, or passes.
"""
import shutil
import sys
import tempfile
import unittest
from pathlib import Path

SRC = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(SRC / "tools"))
import check_host_rooms  # noqa: E402


class RoomsTest(unittest.TestCase):
    def tree(self, files):
        root = Path(tempfile.mkdtemp(prefix="host_rooms_"))
        self.addCleanup(shutil.rmtree, root)
        for rel, text in files.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text)
        return root

    def problems(self, files, cycles_only=False):
        problems, _ = check_host_rooms.check(self.tree(files), cycles_only)
        return "\n".join(problems)

    def test_layered_tree_passes(self):
        self.assertEqual(self.problems({
            "run/report.h": "void host_error(const char *fmt, ...);\n",
            "server/counters.h": "void srv_counters_bump(int n);\n",
            "server/http/http.h": "#include \"server/counters.h\"\ntypedef struct srv_http_request srv_http_request;\n",
            "server/http/http.c": "#include \"server/http/http.h\"\n#include \"run/report.h\"\n",
            "server/routes/metrics.h": "#include \"server/http/http.h\"\n"
                                       "void srv_metrics_handle(void *app, srv_http_request *req);\n",
            "server/routes/metrics.c": "#include \"server/routes/metrics.h\"\n",
            "cli/cmd_serve.c": "#include \"server/routes/metrics.h\"\n#include \"gufo_version.h\"\n",
        }), "")

    def test_old_layout_circle(self):
        """The three files of the flat host before the rooms: http <-> metrics <-> sched."""
        out = self.problems({
            "server_http.h": "typedef struct srv_http_request srv_http_request;\n",
            "server_http.c": "#include \"server_http.h\"\n#include \"server_metrics.h\"\n",
            "server_metrics.h": "#include \"server_http.h\"\nvoid srv_metrics_handle(void *c, srv_http_request *r);\n",
            "server_metrics.c": "#include \"server_metrics.h\"\n#include \"server_sched.h\"\n",
            "server_sched.h": "#include \"server_metrics.h\"\n",
            "server_sched.c": "#include \"server_sched.h\"\n",
        }, cycles_only=True)
        self.assertIn("include circle: server_http -> server_metrics -> server_http (server_http.c:2 includes "
                      "server_metrics; server_metrics.h:1 includes server_http; server_http, server_metrics, "
                      "server_sched all reach one another)", out)

    def test_circle_between_units_without_a_header_circle(self):
        out = self.problems({
            "run/a.h": "int run_a(void);\n", "run/a.c": "#include \"run/a.h\"\n#include \"run/b.h\"\n",
            "run/b.h": "#include \"run/a.h\"\nint run_b(void);\n",
        })
        self.assertIn("include circle: run/a -> run/b -> run/a (run/a.c:2 includes run/b; run/b.h:1 includes run/a)",
                      out)

    def test_lower_room_includes_a_route(self):
        out = self.problems({
            "server/routes/metrics.h": "void srv_metrics_handle(void *app, struct srv_http_request *req);\n",
            "server/http/http.c": "\n#include \"server/routes/metrics.h\"\n",
        })
        self.assertIn("server/http/http.c:2: server/http includes server/routes/metrics.h, but server/http may use "
                      "only server/http, server, run (server/routes is not below it)", out)

    def test_lower_room_calls_a_handler_through_its_own_declaration(self):
        out = self.problems({
            "server/http/http.h": "typedef struct srv_http_request srv_http_request;\n",
            "server/routes/metrics.h": "#include \"server/http/http.h\"\n"
                                       "void srv_metrics_handle(void *app, srv_http_request *req);\n",
            "server/sched/scheduler.c": "#include \"server/http/http.h\"\n"
                                        "void srv_metrics_handle(void *app, srv_http_request *req);\n"
                                        "static void f(void) { srv_metrics_handle(0, 0); }\n",
        })
        self.assertIn("server/sched/scheduler.c:2: server/sched uses srv_metrics_handle, declared in server/routes, "
                      "which server/sched may not use (a lower room calling up)", out)
        self.assertIn("server/sched/scheduler.c:1: server/sched includes server/http/http.h, but server/sched may "
                      "use only server/sched, server, run", out)

    def test_handler_outside_routes(self):
        out = self.problems({"server/http/health.h": "typedef struct srv_http_request srv_http_request;\n"
                                                     "void srv_health_handle(void *app, srv_http_request *req);\n"})
        self.assertIn("server/http/health.h:2: declares the route handler srv_health_handle outside server/routes",
                      out)

    def test_undeclared_room_and_private_header(self):
        out = self.problems({
            "misc/util.c": "int x;\n",
            "server/sched/job_state.h": "struct srv_job { int refs; };\n",
            "server/routes/openai.c": "#include \"server/sched/job_state.h\"\n",
        })
        self.assertIn("misc/util.c: 'misc' is not a room of the host", out)
        self.assertIn("server/routes/openai.c:1: includes server/sched/job_state.h, private to server/sched", out)

    def test_comments_and_strings_are_not_uses(self):
        self.assertEqual(self.problems({
            "server/routes/metrics.h": "void srv_metrics_handle(void *app, struct srv_http_request *req);\n",
            "run/report.c": "/* srv_metrics_handle is not called here */\nconst char *s = \"srv_metrics_handle\";\n",
        }), "")


if __name__ == "__main__":
    unittest.main()
