; The code graph's query for Scala (codeasst.index.tags reads it; the captures are described there).

(package_clause name: (package_identifier) @package)

(class_definition name: (identifier) @name) @definition.class
(object_definition name: (identifier) @name) @definition.object
(package_object name: (identifier) @name) @definition.object
(trait_definition name: (identifier) @name) @definition.trait
(enum_definition name: (identifier) @name) @definition.enum
(function_definition name: [(identifier) (operator_identifier)] @name) @definition.function
(function_declaration name: [(identifier) (operator_identifier)] @name) @definition.method
; an anonymous class (`new Runnable { def run() .. }`): its functions are methods
(instance_expression (template_body) @definition.impl)
(template_body (val_definition pattern: (identifier) @name) @definition.field)

(extends_clause [(type_identifier) (generic_type) (stable_type_identifier)] @reference.inherit)

(call_expression function: [(identifier) (field_expression)] @name) @reference.call
(instance_expression (type_identifier) @name) @reference.class

(import_declaration) @import

(class_parameter name: (identifier) @variable type: (_) @type)
(parameter name: (identifier) @variable type: (_) @type)
(val_definition pattern: (identifier) @variable type: (_) @type)

; `val x = new Foo(..)`, and `val x = Foo(..)` of a capitalized name (a case class's or companion's apply)
(val_definition pattern: (identifier) @variable value: (instance_expression . [(type_identifier) (stable_type_identifier)] @constructor))
(var_definition pattern: (identifier) @variable value: (instance_expression . [(type_identifier) (stable_type_identifier)] @constructor))
(val_definition pattern: (identifier) @variable value: (instance_expression . (generic_type type: (_) @constructor)))
(var_definition pattern: (identifier) @variable value: (instance_expression . (generic_type type: (_) @constructor)))
(val_definition pattern: (identifier) @variable value: (call_expression function: (identifier) @constructor)
  (#match? @constructor "^[A-Z]"))
(var_definition pattern: (identifier) @variable value: (call_expression function: (identifier) @constructor)
  (#match? @constructor "^[A-Z]"))
