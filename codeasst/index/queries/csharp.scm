; The code graph's query for C# (codeasst.index.tags reads it; the captures are described there).
; Names start at the namespace: `namespace Shop.Core { class Cart }` is Shop.Core.Cart.

(file_scoped_namespace_declaration name: (_) @package)
(namespace_declaration name: (_) @name) @definition.namespace

(class_declaration name: (identifier) @name) @definition.class
(struct_declaration name: (identifier) @name) @definition.struct
(interface_declaration name: (identifier) @name) @definition.interface
(enum_declaration name: (identifier) @name) @definition.enum
(record_declaration name: (identifier) @name) @definition.record
(method_declaration name: (identifier) @name) @definition.method
; C# 14's `extension(string s) { .. }` block, which this grammar reads as a constructor named
; `extension` whose body holds local functions, is no definition: its functions, read inside the
; class, are the class's methods.
(constructor_declaration name: (identifier) @name (#not-eq? @name "extension")) @definition.constructor
(destructor_declaration name: (identifier) @name) @definition.method
(local_function_statement name: (identifier) @name) @definition.function
(property_declaration name: (identifier) @name) @definition.field
(field_declaration (variable_declaration (variable_declarator name: (identifier) @name))) @definition.field

(base_list (_) @reference.inherit)

(invocation_expression function: (_) @name) @reference.call
(object_creation_expression type: (_) @name) @reference.class

(using_directive) @import

(variable_declaration type: (_) @type (variable_declarator name: (identifier) @variable))
(parameter type: (_) @type name: (identifier) @variable)
(property_declaration type: (_) @type name: (identifier) @variable)

; `var x = new Foo()`: a type the declaration does not write (a declared one wins)
(variable_declaration (variable_declarator name: (identifier) @variable (object_creation_expression type: (_) @constructor)))
