"""The config's YAML reader: plain values only, refused before any value is used.

Tags, duplicate keys, keys that are lists or mappings, non-decimal integers
(YAML 1.1 reads 007 as octal), nesting deeper than MAX_DEPTH and alias bombs
each stop the read with the line named.
"""

from __future__ import annotations

import re

import yaml

from attnlab.core.errors import ConfigError

MAX_EXPANDED_NODES = 10_000  # a config expands to far fewer YAML nodes; an alias bomb to far more
MAX_DEPTH = 32  # configs nest 3 deep; PyYAML's composer recurses, so thousands of levels crash it


class _StrictLoader(yaml.SafeLoader):
    """A safe loader that refuses duplicate keys, keys that are lists or mappings, nesting deeper than
    MAX_DEPTH and non-decimal integers (YAML 1.1's 007 is octal)."""

    depth = 0

    def compose_node(self, parent, index):
        # The composer recurses once per level: stop long before Python's recursion limit would.
        self.depth += 1
        try:
            if self.depth > MAX_DEPTH:
                line = self.peek_event().start_mark.line + 1
                raise ConfigError(f"values nested more than {MAX_DEPTH} deep at line {line}; a config nests a "
                                  "few levels (section, key, list): flatten it")
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1


def _construct_mapping(loader, node, deep=False):
    seen = set()
    for key_node, _ in node.value:
        if not isinstance(key_node, yaml.ScalarNode):
            kind = "a list" if isinstance(key_node, yaml.SequenceNode) else "a mapping"
            raise ConfigError(f"{kind} used as a key at line {key_node.start_mark.line + 1}; keys are plain "
                              "names (write `name: value`)")
        key = loader.construct_object(key_node, deep=True)
        if key in seen:
            raise ConfigError(f"duplicate key {key!r} at line {key_node.start_mark.line + 1}: the later one would "
                              "silently replace the earlier; keep one")
        seen.add(key)
    return loader.construct_mapping(node, deep=deep)


def _construct_int(loader, node):
    text = loader.construct_scalar(node)
    if not re.fullmatch(r"[-+]?(0|[1-9][0-9_]*)", text):
        raise ConfigError(f"{text!r} at line {node.start_mark.line + 1} is not a plain decimal integer (YAML would "
                          f"read it as octal, hex or base 60); write it without leading zeros")
    return int(text.replace("_", ""))


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
_StrictLoader.add_constructor("tag:yaml.org,2002:int", _construct_int)


def parse_yaml(text: str, source: str):
    """YAML text -> Python, refusing tags, duplicate keys, odd integers and alias bombs, with the place named."""
    try:
        loader = _StrictLoader(text)
        try:
            node = loader.get_single_node()
            if node is None:
                return None
            memo: dict = {}
            if _expanded_size(node, memo) > MAX_EXPANDED_NODES:
                if len(memo) > MAX_EXPANDED_NODES:  # as written, without an alias: simply too many values
                    raise ConfigError(f"it holds more than {MAX_EXPANDED_NODES:,} values; a config lists tens "
                                      "of them, and an axis that long is no grid a build could train: shorten it")
                raise ConfigError(f"its YAML aliases expand to more than {MAX_EXPANDED_NODES:,} values; "
                                  "write the values out instead of nesting aliases")
            return loader.construct_document(node)
        finally:
            loader.dispose()
    except yaml.YAMLError as err:
        raise ConfigError(f"config file {source} is not valid YAML (plain values only): {err}") from None
    except ConfigError as err:
        raise ConfigError(f"config file {source}: {err}") from None


def _expanded_size(node, memo: dict) -> int:
    """How many values the node stands for once aliases are expanded (linear time: shared nodes memoised)."""
    if id(node) in memo:
        return memo[id(node)]
    memo[id(node)] = MAX_EXPANDED_NODES + 1  # a node that contains itself expands without end
    if isinstance(node, yaml.MappingNode):
        size = 1 + sum(_expanded_size(k, memo) + _expanded_size(v, memo) for k, v in node.value)
    elif isinstance(node, yaml.SequenceNode):
        size = 1 + sum(_expanded_size(v, memo) for v in node.value)
    else:
        size = 1
    memo[id(node)] = min(size, MAX_EXPANDED_NODES + 1)
    return memo[id(node)]
