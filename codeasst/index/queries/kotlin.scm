; The code graph's query for Kotlin (codeasst.index.tags reads it; the captures are described there).
; Kotlin's grammar names no fields: children are matched by their type.

(package_header (identifier) @package)

(class_declaration (type_identifier) @name) @definition.class
(object_declaration (type_identifier) @name) @definition.object
(function_declaration (simple_identifier) @name) @definition.function
(class_body (property_declaration (variable_declaration (simple_identifier) @name)) @definition.field)
(source_file (property_declaration (variable_declaration (simple_identifier) @name)) @definition.constant)

(delegation_specifier (user_type) @reference.inherit)
(delegation_specifier (constructor_invocation (user_type) @reference.inherit))

(call_expression . [(simple_identifier) (navigation_expression)] @name) @reference.call

(import_header) @import

(class_parameter (simple_identifier) @variable (user_type) @type)
(parameter (simple_identifier) @variable (user_type) @type)
(property_declaration (variable_declaration (simple_identifier) @variable (user_type) @type))

; `val x = Foo(..)`: Kotlin constructs with a bare call, and a capitalized name is a type's by convention
(property_declaration (variable_declaration (simple_identifier) @variable)
  (call_expression . [(simple_identifier) (navigation_expression)] @constructor . (call_suffix))
  (#match? @constructor "^([A-Za-z0-9_]+[.])*[A-Z][A-Za-z0-9_]*$"))
