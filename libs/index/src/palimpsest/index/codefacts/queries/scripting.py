"""Ruby and PHP: classes, modules, methods, ``require``/``include``/``use`` and metaprogramming."""

from __future__ import annotations

RUBY = r"""
(class name: [(constant) (scope_resolution)] @name) @definition.class
(module name: [(constant) (scope_resolution)] @name) @definition.module
(method name: (_) @name) @definition.method
(singleton_method name: (_) @name) @definition.method

(call method: (identifier) @reference.call)
(call method: (identifier) @_mixin arguments: (argument_list (constant) @reference.type)
  (#any-of? @_mixin "include" "extend" "prepend"))
(superclass (constant) @reference.type)
(superclass (scope_resolution name: (constant) @reference.type))
(call receiver: (constant) @reference.type)
(call receiver: (scope_resolution name: (constant) @reference.type))

(call method: (identifier) @_require arguments: (argument_list . (string (string_content) @import.require))
  (#eq? @_require "require"))
(call method: (identifier) @_require arguments: (argument_list . (string (string_content) @import.require_relative))
  (#eq? @_require "require_relative"))
(call method: (identifier) @_require arguments: (argument_list . (string (string_content) @import.load))
  (#eq? @_require "load"))

(call method: (identifier) @dynamic.call
  (#any-of? @dynamic.call "send" "public_send" "__send__" "method" "define_method"
                          "instance_variable_get" "const_get" "instance_eval" "class_eval" "eval"))
"""

PHP = r"""
(class_declaration name: (name) @name) @definition.class
(interface_declaration name: (name) @name) @definition.interface
(trait_declaration name: (name) @name) @definition.trait
(enum_declaration name: (name) @name) @definition.enum
(function_definition name: (name) @name) @definition.function
(method_declaration name: (name) @name) @definition.method
(namespace_definition name: (namespace_name) @name body: (compound_statement)) @definition.module

(function_call_expression function: (name) @reference.call)
(function_call_expression function: (qualified_name (name) @reference.call .))
(member_call_expression name: (name) @reference.call)
(nullsafe_member_call_expression name: (name) @reference.call)
(scoped_call_expression name: (name) @reference.call)
(scoped_call_expression scope: (name) @reference.type)
(named_type (name) @reference.type)
(object_creation_expression (name) @reference.type)
(base_clause (name) @reference.type)
(class_interface_clause (name) @reference.type)
(use_declaration (name) @reference.type)

(namespace_use_declaration) @import.statement
(include_expression
  [(string (string_content) @import.include)
   (binary_expression right: (string (string_content) @import.include))])
(include_once_expression
  [(string (string_content) @import.include)
   (binary_expression right: (string (string_content) @import.include))])
(require_expression
  [(string (string_content) @import.require)
   (binary_expression right: (string (string_content) @import.require))])
(require_once_expression
  [(string (string_content) @import.require)
   (binary_expression right: (string (string_content) @import.require))])

(member_call_expression name: (variable_name) @dynamic.variable_method)
(function_call_expression function: (variable_name) @dynamic.variable_function)
(function_call_expression function: (name) @dynamic.call
  (#any-of? @dynamic.call "call_user_func" "call_user_func_array"))
"""
