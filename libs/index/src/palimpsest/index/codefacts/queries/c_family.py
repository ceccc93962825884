"""C, C++ and C#: functions by their declarator, aggregates, namespaces, includes, usings.

In C a call through a struct field or a parenthesised expression is a call through a function
pointer, so it is recorded as a dynamic site; in C++ a field call is an ordinary method call.
Prototypes are symbols but not chunks: they stay in the windows around them.
"""

from __future__ import annotations

C_WRAPPERS = frozenset({"declaration", "type_definition"})
CPP_WRAPPERS = frozenset({"declaration", "type_definition", "template_declaration"})

_FUNCTIONS = r"""
(function_definition
  declarator: (function_declarator declarator: (_) @name)) @definition.function
(function_definition
  declarator: (_ (function_declarator declarator: (_) @name))) @definition.function
(declaration
  declarator: (function_declarator declarator: (_) @name)) @declaration.function
(declaration
  declarator: (_ (function_declarator declarator: (_) @name))) @declaration.function
"""

_AGGREGATES = r"""
(type_definition
  type: [(struct_specifier body: (_)) (union_specifier body: (_))]
  declarator: (type_identifier) @name) @definition.struct
(type_definition type: (enum_specifier body: (_)) declarator: (type_identifier) @name) @definition.enum
(type_definition declarator: (type_identifier) @name) @definition.type
(struct_specifier name: (type_identifier) @name body: (_)) @definition.struct
(union_specifier name: (type_identifier) @name body: (_)) @definition.struct
(enum_specifier name: (type_identifier) @name body: (_)) @definition.enum
"""

_C_USES = r"""
(call_expression function: (identifier) @reference.call)
(type_identifier) @reference.type
(preproc_include path: (_) @import.include)
"""

C = (
    _FUNCTIONS
    + _AGGREGATES
    + _C_USES
    + r"""
(call_expression function: (field_expression field: (field_identifier) @reference.call))
(call_expression function: (field_expression) @dynamic.function_pointer)
(call_expression function: (parenthesized_expression) @dynamic.function_pointer)
"""
)

CPP = (
    _FUNCTIONS
    + r"""
(field_declaration
  declarator: (function_declarator declarator: (_) @name)) @declaration.method
(class_specifier name: (type_identifier) @name body: (_)) @definition.class
(namespace_definition name: (_) @name) @definition.module
(alias_declaration name: (type_identifier) @name) @definition.type
"""
    + _AGGREGATES
    + _C_USES
    + r"""
(call_expression function: (field_expression field: (field_identifier) @reference.call))
(call_expression function: (qualified_identifier name: (identifier) @reference.call))
(call_expression function: (template_function name: (identifier) @reference.call))
(using_declaration) @import.statement
(call_expression function: (parenthesized_expression) @dynamic.function_pointer)
"""
)

CSHARP = r"""
(class_declaration name: (identifier) @name) @definition.class
(interface_declaration name: (identifier) @name) @definition.interface
(struct_declaration name: (identifier) @name) @definition.struct
(enum_declaration name: (identifier) @name) @definition.enum
(record_declaration name: (identifier) @name) @definition.class
(delegate_declaration name: (identifier) @name) @definition.type
(method_declaration name: (identifier) @name) @definition.method
(constructor_declaration name: (identifier) @name) @definition.method
(namespace_declaration name: (_) @name) @definition.module

(invocation_expression function: (identifier) @reference.call)
(invocation_expression function: (generic_name (identifier) @reference.call))
(invocation_expression function: (member_access_expression name: (identifier) @reference.call))
(invocation_expression
  function: (member_access_expression name: (generic_name (identifier) @reference.call)))
(base_list (identifier) @reference.type)
(generic_name (identifier) @reference.type)
(type_argument_list (identifier) @reference.type)
(object_creation_expression type: (identifier) @reference.type)
(parameter type: (identifier) @reference.type)
(variable_declaration type: (identifier) @reference.type)
(method_declaration returns: (identifier) @reference.type)
(property_declaration type: (identifier) @reference.type)
(typeof_expression type: (identifier) @reference.type)
(qualified_name name: (identifier) @reference.type)

(using_directive) @import.statement

(invocation_expression
  function: (member_access_expression name: (identifier) @dynamic.call)
  (#any-of? @dynamic.call "GetMethod" "GetProperty" "GetField" "InvokeMember" "CreateInstance"
                          "DynamicInvoke" "GetType"))
"""
