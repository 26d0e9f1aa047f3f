; The code graph's query for PHP (codeasst.index.tags reads it; the captures are described there).
; Names start at the file's namespace (`namespace Shop\Core;`), as `use` statements name them.

(namespace_definition name: (namespace_name) @package)

(class_declaration name: (name) @name) @definition.class
(interface_declaration name: (name) @name) @definition.interface
(trait_declaration name: (name) @name) @definition.trait
(enum_declaration name: (name) @name) @definition.enum
(method_declaration name: (name) @name) @definition.method
(function_definition name: (name) @name) @definition.function
(property_declaration (property_element name: (variable_name (name) @name))) @definition.field
(const_declaration (const_element (name) @name)) @definition.constant

(base_clause (_) @reference.inherit)
(class_interface_clause (_) @reference.implementation)

(member_call_expression object: (_) @receiver name: (name) @name) @reference.call
(nullsafe_member_call_expression object: (_) @receiver name: (name) @name) @reference.call
(scoped_call_expression scope: (_) @receiver name: (name) @name) @reference.call
(function_call_expression function: [(name) (qualified_name)] @name) @reference.call
(object_creation_expression [(name) (qualified_name)] @name) @reference.class

(namespace_use_declaration) @import

(property_declaration type: (named_type (_) @type) (property_element name: (variable_name (name) @variable)))
(simple_parameter type: (named_type (_) @type) name: (variable_name (name) @variable))
(property_promotion_parameter type: (named_type (_) @type) name: (variable_name (name) @variable))
