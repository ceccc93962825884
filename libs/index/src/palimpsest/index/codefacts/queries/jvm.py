"""Java, Kotlin and Scala: types, members, imports and reflection sites."""

from __future__ import annotations

JAVA = r"""
(class_declaration name: (identifier) @name) @definition.class
(interface_declaration name: (identifier) @name) @definition.interface
(enum_declaration name: (identifier) @name) @definition.enum
(record_declaration name: (identifier) @name) @definition.class
(annotation_type_declaration name: (identifier) @name) @definition.interface
(method_declaration name: (identifier) @name) @definition.method
(constructor_declaration name: (identifier) @name) @definition.method
(compact_constructor_declaration name: (identifier) @name) @definition.method

(method_invocation name: (identifier) @reference.call)
(type_identifier) @reference.type

(import_declaration) @import.statement

(method_invocation name: (identifier) @dynamic.call
  (#any-of? @dynamic.call "forName" "getMethod" "getDeclaredMethod" "getDeclaredField"
                          "getField" "newInstance" "invoke" "loadClass"))
"""

# fields (constants when ``static final``) and enum constants
JAVA_BINDINGS = r"""
(field_declaration (modifiers "static" "final") declarator: (variable_declarator name: (identifier) @name)) @binding.constant
(field_declaration declarator: (variable_declarator name: (identifier) @name)) @binding.field
(enum_constant name: (identifier) @name) @binding.constant
"""

KOTLIN = r"""
(class_declaration "interface" (type_identifier) @name) @definition.interface
(class_declaration (type_identifier) @name (enum_class_body)) @definition.enum
(class_declaration (type_identifier) @name) @definition.class
(object_declaration (type_identifier) @name) @definition.object
(function_declaration (simple_identifier) @name) @definition.function
(type_alias (type_identifier) @name) @definition.type

(call_expression . (simple_identifier) @reference.call)
(call_expression . (navigation_expression (navigation_suffix (simple_identifier) @reference.call) .))
(user_type (type_identifier) @reference.type)

(import_header (identifier) @import.import)

(call_expression
  . (navigation_expression (navigation_suffix (simple_identifier) @dynamic.call) .)
  (#any-of? @dynamic.call "forName" "getMethod" "getDeclaredMethod" "newInstance" "callBy"))
"""

SCALA = r"""
(class_definition name: (identifier) @name) @definition.class
(object_definition name: (identifier) @name) @definition.object
(trait_definition name: (identifier) @name) @definition.trait
(enum_definition name: (identifier) @name) @definition.enum
(function_definition name: (identifier) @name) @definition.function
(function_declaration name: (identifier) @name) @definition.function
(type_definition name: (type_identifier) @name) @definition.type

(call_expression function: (identifier) @reference.call)
(call_expression function: (field_expression field: (identifier) @reference.call))
(instance_expression (type_identifier) @reference.type)
(type_identifier) @reference.type

(import_declaration) @import.statement

(call_expression
  function: (field_expression field: (identifier) @dynamic.call)
  (#any-of? @dynamic.call "forName" "getMethod" "getDeclaredMethod" "newInstance" "invoke"))
"""
