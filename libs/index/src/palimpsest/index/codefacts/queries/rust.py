"""Rust: items, traits, impl blocks as containers, ``use``/``mod``/``extern crate``."""

from __future__ import annotations

QUERY = r"""
(function_item name: (identifier) @name) @definition.function
(function_signature_item name: (identifier) @name) @definition.method
(struct_item name: (type_identifier) @name) @definition.struct
(union_item name: (type_identifier) @name) @definition.struct
(enum_item name: (type_identifier) @name) @definition.enum
(trait_item name: (type_identifier) @name) @definition.trait
(type_item name: (type_identifier) @name) @definition.type
(mod_item name: (identifier) @name body: (_)) @definition.module
(macro_definition name: (identifier) @name) @definition.macro
(impl_item
  type: [(type_identifier) @name
         (generic_type type: (type_identifier) @name)
         (scoped_type_identifier name: (type_identifier) @name)]) @container.impl

(call_expression function: (identifier) @reference.call)
(call_expression function: (field_expression field: (field_identifier) @reference.member))
(call_expression function: (scoped_identifier name: (identifier) @reference.call))
(call_expression function: (generic_function function: (identifier) @reference.call))
(macro_invocation macro: (identifier) @reference.call)
(type_identifier) @reference.type

(use_declaration argument: (_) @import.use)
(use_declaration (visibility_modifier) argument: (_) @import.pub_use)
(extern_crate_declaration name: (identifier) @import.extern_crate)
(mod_item name: (identifier) @import.mod !body)
"""

# constants, statics, struct fields and enum variants
BINDINGS = r"""
(const_item name: (identifier) @name) @binding.constant
(static_item name: (identifier) @name) @binding.constant
(field_declaration name: (field_identifier) @name) @binding.field
(enum_variant name: (identifier) @name) @binding.variant
"""
