"""Swift: classes, structs, enums, actors, protocols, extensions as containers, imports."""

from __future__ import annotations

QUERY = r"""
(class_declaration declaration_kind: "struct" name: (type_identifier) @name) @definition.struct
(class_declaration declaration_kind: "enum" name: (type_identifier) @name) @definition.enum
(class_declaration declaration_kind: "extension" name: (user_type (type_identifier) @name)) @container.extension
(class_declaration name: (type_identifier) @name) @definition.class
(protocol_declaration name: (type_identifier) @name) @definition.interface
(function_declaration name: (simple_identifier) @name) @definition.function
(protocol_function_declaration name: (simple_identifier) @name) @definition.method
(init_declaration "init" @name) @definition.method
(typealias_declaration name: (type_identifier) @name) @definition.type

(call_expression . (simple_identifier) @reference.call)
(call_expression . (navigation_expression suffix: (navigation_suffix suffix: (simple_identifier) @reference.call)))
(user_type (type_identifier) @reference.type)

(import_declaration (identifier) @import.import)

(call_expression . (simple_identifier) @dynamic.call
  (#any-of? @dynamic.call "NSSelectorFromString" "NSClassFromString"))
(call_expression
  . (navigation_expression suffix: (navigation_suffix suffix: (simple_identifier) @dynamic.call))
  (#any-of? @dynamic.call "perform"))
"""
