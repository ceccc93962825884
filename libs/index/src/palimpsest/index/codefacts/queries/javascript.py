"""JavaScript, TypeScript and TSX: one vocabulary, three grammars.

Besides declarations, a ``const``/``let``/``var`` bound to an arrow function or function
expression is a function (React components, handlers), and a class field holding one is a
method. Imports cover ``import``, re-exports, ``require()`` and ``import()``.
"""

from __future__ import annotations

WRAPPERS = frozenset(
    {
        "export_statement",
        "lexical_declaration",
        "variable_declaration",
        "ambient_declaration",
        "expression_statement",
    }
)

_SHARED_DEFINITIONS = r"""
(function_declaration name: (identifier) @name) @definition.function
(generator_function_declaration name: (identifier) @name) @definition.function
(method_definition name: (_) @name) @definition.method
(lexical_declaration
  (variable_declarator
    name: (identifier) @name
    value: [(arrow_function) (function_expression) (generator_function)]) @definition.function)
(variable_declaration
  (variable_declarator
    name: (identifier) @name
    value: [(arrow_function) (function_expression) (generator_function)]) @definition.function)
"""

_TYPESCRIPT_DEFINITIONS = r"""
(class_declaration name: (type_identifier) @name) @definition.class
(abstract_class_declaration name: (type_identifier) @name) @definition.class
(interface_declaration name: (type_identifier) @name) @definition.interface
(type_alias_declaration name: (type_identifier) @name) @definition.type
(enum_declaration name: (identifier) @name) @definition.enum
(internal_module name: (_) @name) @definition.module
(module name: (_) @name) @definition.module
(function_signature name: (identifier) @name) @declaration.function
(method_signature name: (_) @name) @definition.method
(abstract_method_signature name: (_) @name) @definition.method
(public_field_definition
  name: (property_identifier) @name
  value: [(arrow_function) (function_expression)]) @definition.method
"""

_JAVASCRIPT_DEFINITIONS = r"""
(class_declaration name: (identifier) @name) @definition.class
(class_heritage (identifier) @reference.type)
(field_definition
  property: (property_identifier) @name
  value: [(arrow_function) (function_expression)]) @definition.method
"""

_SHARED_REFERENCES = r"""
(call_expression function: (identifier) @reference.call)
(call_expression function: (member_expression property: (property_identifier) @reference.member))
(new_expression constructor: (identifier) @reference.type)
(new_expression constructor: (member_expression property: (property_identifier) @reference.type))

(import_statement source: (string (string_fragment) @import.import))
(export_statement source: (string (string_fragment) @import.reexport))
(call_expression
  function: (import)
  arguments: (arguments . (string (string_fragment) @import.dynamic_import)))
(call_expression
  function: (identifier) @_require
  arguments: (arguments . (string (string_fragment) @import.require))
  (#eq? @_require "require"))

(call_expression function: (subscript_expression) @dynamic.subscript_call)
(call_expression function: (identifier) @dynamic.call (#eq? @dynamic.call "eval"))
(new_expression constructor: (identifier) @dynamic.call (#eq? @dynamic.call "Function"))
(call_expression
  function: (member_expression object: (identifier) @_reflect) @dynamic.reflection
  (#eq? @_reflect "Reflect"))
(call_expression
  function: (import)
  arguments: (arguments . [(identifier) (template_string) (binary_expression)
                           (member_expression)] @dynamic.dynamic_import))
(call_expression
  function: (identifier) @_require
  arguments: (arguments . [(identifier) (template_string) (binary_expression)
                           (member_expression)] @dynamic.dynamic_require)
  (#eq? @_require "require"))
"""

_TYPESCRIPT_REFERENCES = r"""
(type_identifier) @reference.type
(extends_clause value: (identifier) @reference.type)
(import_require_clause source: (string (string_fragment) @import.require))
"""

_JSX_REFERENCES = r"""
(jsx_opening_element name: (identifier) @reference.call)
(jsx_self_closing_element name: (identifier) @reference.call)
"""

TYPESCRIPT = _SHARED_DEFINITIONS + _TYPESCRIPT_DEFINITIONS + _SHARED_REFERENCES + _TYPESCRIPT_REFERENCES
TSX = TYPESCRIPT + _JSX_REFERENCES
JAVASCRIPT = _SHARED_DEFINITIONS + _JAVASCRIPT_DEFINITIONS + _SHARED_REFERENCES + _JSX_REFERENCES

# module-level variables and constants, ``this.x = …``, class fields and object keys
_SHARED_BINDINGS = r"""
(program (lexical_declaration "const" (variable_declarator name: (identifier) @name) @binding.constant))
(program (lexical_declaration (variable_declarator name: (identifier) @name) @binding.assignment))
(program (variable_declaration (variable_declarator name: (identifier) @name) @binding.assignment))
(program (export_statement (lexical_declaration "const" (variable_declarator name: (identifier) @name) @binding.constant)))
(program (export_statement (lexical_declaration (variable_declarator name: (identifier) @name) @binding.assignment)))
(program (export_statement (variable_declaration (variable_declarator name: (identifier) @name) @binding.assignment)))
(assignment_expression left: (member_expression object: (this) property: (property_identifier) @name)) @binding.attribute
(program (expression_statement (assignment_expression
  left: (member_expression property: (property_identifier) @name)) @binding.attribute))
(pair key: (property_identifier) @name) @binding.key
"""
TYPESCRIPT_BINDINGS = (
    _SHARED_BINDINGS
    + r"""
(public_field_definition name: (property_identifier) @name) @binding.field
(property_signature name: (property_identifier) @name) @binding.field
"""
)
JAVASCRIPT_BINDINGS = (
    _SHARED_BINDINGS
    + r"""
(field_definition property: (property_identifier) @name) @binding.field
"""
)
