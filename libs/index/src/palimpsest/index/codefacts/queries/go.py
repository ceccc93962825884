"""Go: functions, methods with their receiver type, structs, interfaces, types, imports."""

from __future__ import annotations

WRAPPERS = frozenset({"type_declaration"})

QUERY = r"""
(function_declaration name: (identifier) @name) @definition.function
(method_declaration
  receiver: (parameter_list
    (parameter_declaration
      type: [(type_identifier) @receiver
             (pointer_type (type_identifier) @receiver)
             (generic_type type: (type_identifier) @receiver)
             (pointer_type (generic_type type: (type_identifier) @receiver))]))
  name: (field_identifier) @name) @definition.method
(type_spec name: (type_identifier) @name type: (struct_type)) @definition.struct
(type_spec name: (type_identifier) @name type: (interface_type)) @definition.interface
(type_spec name: (type_identifier) @name) @definition.type
(type_alias name: (type_identifier) @name) @definition.type
(method_elem name: (field_identifier) @name) @definition.method

(call_expression function: (identifier) @reference.call)
(call_expression function: (selector_expression field: (field_identifier) @reference.member))
(type_identifier) @reference.type

(import_spec path: (_) @import.import)

(call_expression
  function: (selector_expression operand: (identifier) @_package) @dynamic.reflection
  (#eq? @_package "reflect"))
"""

# package-level constants and variables, and struct fields
BINDINGS = r"""
(source_file (const_declaration (const_spec name: (identifier) @name) @binding.constant))
(source_file (var_declaration (var_spec name: (identifier) @name) @binding.assignment))
(source_file (var_declaration (var_spec_list (var_spec name: (identifier) @name) @binding.assignment)))
(field_declaration name: (field_identifier) @name) @binding.field
"""
