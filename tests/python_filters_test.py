#!/usr/bin/python3
"""The Python client's filters (clients/python/tandem_client/filters.py) turned into requests, with
no server: each tuple and dict shape into its DocumentFilter, text into filter_text, and the
shapes the tree cannot express into ValueError. python_client_test.py sends them to a real server.

    /usr/bin/python3 tests/python_filters_test.py

Exits 77 (ctest SKIP_RETURN_CODE) when grpcio or protobuf cannot be imported.
"""

from __future__ import annotations

import unittest

# First: clients/python on the path, or exit 77 (SKIP) without grpcio and protobuf.
import client_env  # noqa: F401
from google.protobuf import text_format  # noqa: E402
from tandem_client import Query  # noqa: E402
from tandem_client._proto import search_pb2  # noqa: E402
from tandem_client.filters import filter_to_proto  # noqa: E402


def parse(text: str) -> search_pb2.DocumentFilter:
    return text_format.Parse(text, search_pb2.DocumentFilter())


class LeafTest(unittest.TestCase):
    def assertConverts(self, spec, expected: str) -> None:
        self.assertEqual(filter_to_proto(spec), parse(expected), spec)

    def test_equals(self):
        self.assertConverts(("label", "=", "spam"), 'equals { field: "label" value: "spam" }')
        self.assertConverts(["label", "eq", "spam"], 'equals { field: "label" value: "spam" }')
        self.assertConverts(("year", "==", 2002), 'equals { field: "year" value: "2002" }')
        self.assertConverts(("n", "=", -7), 'equals { field: "n" value: "-7" }')
        self.assertConverts(("label", "=", ""), 'equals { field: "label" value: "" }')

    def test_not_equals_is_not_of_equals(self):
        self.assertConverts(("label", "!=", "spam"), 'not { equals { field: "label" value: "spam" } }')
        self.assertConverts(("year", "NE", 2002), 'not { equals { field: "year" value: "2002" } }')

    def test_in(self):
        self.assertConverts(("topics", "in", ["grain", "wheat"]),
                            'in { field: "topics" values: "grain" values: "wheat" }')
        self.assertConverts(("year", "IN", (2001, "2002")),
                            'in { field: "year" values: "2001" values: "2002" }')
        self.assertConverts(("topics", "in", (t for t in ["corn"])),
                            'in { field: "topics" values: "corn" }')

    def test_comparisons_are_ranges_with_inclusive_bounds(self):
        self.assertConverts(("year", ">=", 2002), 'range { field: "year" min: 2002 }')
        self.assertConverts(("year", ">", 2001), 'range { field: "year" min: 2002 }')
        self.assertConverts(("year", "<=", 2004), 'range { field: "year" max: 2004 }')
        self.assertConverts(("year", "lt", 2005), 'range { field: "year" max: 2004 }')
        self.assertConverts(("year", "ge", -(2**63)), f'range {{ field: "year" min: {-(2**63)} }}')

    def test_range(self):
        self.assertConverts(("year", "range", 2000, 2004),
                            'range { field: "year" min: 2000 max: 2004 }')
        self.assertConverts(("year", "range", 2000, None), 'range { field: "year" min: 2000 }')
        self.assertConverts(("year", "range", None, 2004), 'range { field: "year" max: 2004 }')
        self.assertConverts(("year", "range", 2002, 2002),
                            'range { field: "year" min: 2002 max: 2002 }')
        # Both sides open: every document with a value of the field.
        self.assertTrue(filter_to_proto(("year", "range", None, None)).HasField("range"))


class TreeTest(unittest.TestCase):
    def test_and_or_not(self):
        spec = {"or": [
            {"and": [("label", "=", "spam"), ("year", ">=", 2002)]},
            {"not": ("topics", "in", ["grain"])},
        ]}
        self.assertEqual(filter_to_proto(spec), parse('''
            or {
              filters { and {
                filters { equals { field: "label" value: "spam" } }
                filters { range { field: "year" min: 2002 } }
              } }
              filters { not { in { field: "topics" values: "grain" } } }
            }'''))

    def test_one_child_and_nested_not(self):
        self.assertEqual(filter_to_proto({"and": [("a", "=", "x")]}),
                         parse('and { filters { equals { field: "a" value: "x" } } }'))
        self.assertEqual(filter_to_proto({"not": {"not": ("a", "=", "x")}}),
                         parse('not { not { equals { field: "a" value: "x" } } }'))

    def test_a_message_passes_as_it_is(self):
        message = parse('equals { field: "a" value: "x" }')
        self.assertEqual(filter_to_proto(message), message)
        self.assertEqual(filter_to_proto({"not": message}), parse(f"not {{ {message} }}"))


class QueryTest(unittest.TestCase):
    def test_text_goes_to_filter_text(self):
        req = Query(text="bear", filter="label = spam AND year >= 2002").to_proto()
        self.assertEqual(req.filter_text, "label = spam AND year >= 2002")
        self.assertFalse(req.HasField("filter"))

    def test_a_tree_goes_to_filter(self):
        req = Query(text="bear", filter=("label", "=", "spam")).to_proto()
        self.assertEqual(req.filter_text, "")
        self.assertEqual(req.filter, parse('equals { field: "label" value: "spam" }'))

    def test_no_filter(self):
        for f in (None, ""):
            req = Query(text="bear", filter=f).to_proto()
            self.assertEqual(req.filter_text, "")
            self.assertFalse(req.HasField("filter"))


class ShapeErrorTest(unittest.TestCase):
    def assertRefused(self, spec, message: str) -> None:
        with self.assertRaises(ValueError, msg=spec) as cm:
            filter_to_proto(spec)
        self.assertIn(message, str(cm.exception), spec)
        with self.assertRaises(ValueError, msg=spec):
            Query(text="bear", filter=spec).to_proto()

    def test_leaves(self):
        self.assertRefused(("label",), "a leaf is (field, op, value)")
        self.assertRefused(("label", "="), "a leaf is (field, op, value)")
        self.assertRefused((1, "=", "x"), "a leaf is (field, op, value)")
        self.assertRefused(("", "=", "x"), "an empty field name")
        self.assertRefused(("label", "~", "spam"), "unknown operator '~'")
        self.assertRefused(("label", "=", "spam", "ham"), "takes one value")
        self.assertRefused(("score", "=", 0.5), "a value is a str or an int, not float")
        self.assertRefused(("flag", "=", True), "not a bool")
        self.assertRefused(("year", "=", 2**63), "out of the int64 range")

    def test_in(self):
        self.assertRefused(("topics", "in", "grain"), "'in' takes a list of values")
        self.assertRefused(("topics", "in", []), "'in' needs at least one value")
        self.assertRefused(("topics", "in", ["grain", None]), "a value is a str or an int")

    def test_ranges(self):
        self.assertRefused(("year", ">=", "2002"), "a bound is an int, not '2002'")
        self.assertRefused(("year", ">", 2**63 - 1), "out of the int64 range")
        self.assertRefused(("year", "<", -(2**63)), "out of the int64 range")
        self.assertRefused(("year", "range", 2004, 2000), "low bound 2004 is above its high bound 2000")
        self.assertRefused(("year", "range", 2000), "a range is (field, 'range', lo, hi)")
        self.assertRefused(("year", "range", 2000.0, None), "a bound is an int")

    def test_combinations(self):
        self.assertRefused({"and": []}, "filter.and: needs at least one filter")
        self.assertRefused({"or": ("a", "=", "x")}, "filter.or: a list of filters")
        self.assertRefused({"xor": [("a", "=", "x")]}, "exactly one key, 'and', 'or' or 'not'")
        self.assertRefused({"and": [("a", "=", "x")], "or": [("b", "=", "y")]}, "exactly one key")
        self.assertRefused({"and": [("a", "=", "x"), ("b", "~", "y")]},
                           "filter.and[1]: unknown operator")
        self.assertRefused({"not": {"or": [("a", "=", "x"), "b = y"]}},
                           "filter.not.or[1]: text ('b = y') is only accepted as the whole filter")
        self.assertRefused([("a", "=", "x"), ("b", "=", "y")], "combine filters with {'and'")
        self.assertRefused(42, "not int")
        with self.assertRaises(ValueError):
            filter_to_proto(None)  # Query's filter=None is no filter; the tree has no None


if __name__ == "__main__":
    unittest.main(verbosity=2)
