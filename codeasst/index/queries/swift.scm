; The code graph's query for Swift (codeasst.index.tags reads it; the captures are described there).
; A module's types are visible in all its files without an import: names start at the type.

(class_declaration name: (type_identifier) @name) @definition.class
(class_declaration name: (user_type (type_identifier) @name)) @definition.impl
(protocol_declaration name: (type_identifier) @name) @definition.interface
(function_declaration name: (simple_identifier) @name) @definition.function
(protocol_function_declaration name: (simple_identifier) @name) @definition.method
(init_declaration "init" @name) @definition.constructor
(class_body (property_declaration name: (pattern bound_identifier: (simple_identifier) @name)) @definition.field)
(enum_entry name: (simple_identifier) @name) @definition.constant

(inheritance_specifier inherits_from: (_) @reference.inherit)

(call_expression . [(simple_identifier) (navigation_expression)] @name) @reference.call

(import_declaration) @import

(property_declaration name: (pattern bound_identifier: (simple_identifier) @variable) (type_annotation (_) @type))
(parameter (simple_identifier) @variable . (user_type) @type)

; `let x = Foo(..)`, `let x = Foo<T>()`: Swift constructs with a bare call of a capitalized name
(property_declaration name: (pattern bound_identifier: (simple_identifier) @variable)
  value: (call_expression . [(simple_identifier) (navigation_expression)] @constructor . (call_suffix))
  (#match? @constructor "^([A-Za-z0-9_]+[.])*[A-Z][A-Za-z0-9_]*$"))
(property_declaration name: (pattern bound_identifier: (simple_identifier) @variable)
  value: (constructor_expression constructed_type: (_) @constructor))
