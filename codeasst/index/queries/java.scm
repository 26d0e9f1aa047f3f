; The code graph's query for Java (codeasst.index.tags reads it; the captures are described there).

(package_declaration [(identifier) (scoped_identifier)] @package)

(class_declaration name: (identifier) @name) @definition.class
(interface_declaration name: (identifier) @name) @definition.interface
(enum_declaration name: (identifier) @name) @definition.enum
(record_declaration name: (identifier) @name) @definition.record
(annotation_type_declaration name: (identifier) @name) @definition.interface
(method_declaration name: (identifier) @name) @definition.method
(constructor_declaration name: (identifier) @name) @definition.constructor
(compact_constructor_declaration name: (identifier) @name) @definition.constructor
(field_declaration declarator: (variable_declarator name: (identifier) @name)) @definition.field
(constant_declaration declarator: (variable_declarator name: (identifier) @name)) @definition.constant

(superclass (_) @reference.inherit)
(super_interfaces (type_list (_) @reference.implementation))
(extends_interfaces (type_list (_) @reference.implementation))

(method_invocation object: (_) @receiver name: (identifier) @name) @reference.call
(method_invocation !object name: (identifier) @name) @reference.call
(object_creation_expression type: (_) @name) @reference.class

(import_declaration) @import

(local_variable_declaration type: (_) @type declarator: (variable_declarator name: (identifier) @variable))
(formal_parameter type: (_) @type name: (identifier) @variable)
(field_declaration type: (_) @type declarator: (variable_declarator name: (identifier) @variable))

; `var x = new Foo()`: a type the declaration does not write (a declared one wins)
(local_variable_declaration declarator: (variable_declarator name: (identifier) @variable
  value: (object_creation_expression type: (_) @constructor)))
