"""Python: classes, functions (methods by position), PEP 695 type aliases, imports, getattr."""

from __future__ import annotations

WRAPPERS = frozenset({"decorated_definition"})

QUERY = r"""
(class_definition name: (identifier) @name) @definition.class
(function_definition name: (identifier) @name) @definition.function
(type_alias_statement left: (type (identifier) @name)) @definition.type

(call function: (identifier) @reference.call)
(call function: (attribute attribute: (identifier) @reference.member))
(decorator (identifier) @reference.call)
(decorator (attribute attribute: (identifier) @reference.call))
(type (identifier) @reference.type)
(generic_type (identifier) @reference.type)
(type (attribute attribute: (identifier) @reference.type))
(class_definition superclasses: (argument_list (identifier) @reference.type))
(class_definition superclasses: (argument_list (attribute attribute: (identifier) @reference.type)))

(import_statement name: (dotted_name) @import.import)
(import_statement name: (aliased_import name: (dotted_name) @import.import))
(import_from_statement module_name: (_) @import.from name: (dotted_name) @imported)
(import_from_statement module_name: (_) @import.from name: (aliased_import name: (dotted_name) @imported))
(import_from_statement module_name: (_) @import.from (wildcard_import) @imported)

(call function: (identifier) @dynamic.call
  (#any-of? @dynamic.call "getattr" "setattr" "eval" "exec" "__import__"))
(call function: (attribute object: (identifier) @_module attribute: (identifier) @dynamic.call)
  (#eq? @_module "importlib") (#eq? @dynamic.call "import_module"))
(call function: (subscript) @dynamic.subscript_call)
"""

# assignments at module and class level (constants by their upper-case name), and attributes set
# on ``self``/``cls``: definitions a doc can name, which the chunker does not index as symbols
BINDINGS = r"""
(module (assignment left: (identifier) @name (#match? @name "^_*[A-Z][A-Z0-9_]*$")) @binding.constant)
(module (assignment left: (identifier) @name) @binding.assignment)
(class_definition body: (block (assignment left: (identifier) @name) @binding.field))
(assignment left: (attribute object: (identifier) @_self attribute: (identifier) @name)
  (#any-of? @_self "self" "cls")) @binding.attribute
"""
