; The code graph's query for Rust (codeasst.index.tags reads it; the captures are described there).

(function_item name: (identifier) @name) @definition.function
(function_signature_item name: (identifier) @name) @definition.method
(macro_definition name: (identifier) @name) @definition.macro
(struct_item name: (type_identifier) @name) @definition.struct
(union_item name: (type_identifier) @name) @definition.union
(enum_item name: (type_identifier) @name) @definition.enum
(trait_item name: (type_identifier) @name) @definition.trait
(type_item name: (type_identifier) @name) @definition.type
(mod_item name: (identifier) @name body: (_)) @definition.module
(const_item name: (identifier) @name) @definition.constant
(static_item name: (identifier) @name) @definition.constant
(field_declaration name: (field_identifier) @name) @definition.field

; `impl Foo` and `impl Trait for Foo`: the methods are Foo's (`Foo.method`)
(impl_item type: [(type_identifier) (scoped_type_identifier)] @name) @definition.impl
(impl_item type: (generic_type type: (_) @name)) @definition.impl
(impl_item trait: [(type_identifier) (scoped_type_identifier)] @reference.implementation)
(impl_item trait: (generic_type type: (_) @reference.implementation))

(call_expression function: (_) @name) @reference.call
(call_expression function: (generic_function function: (_) @name)) @reference.call
(macro_invocation macro: (identifier) @name) @reference.call
(struct_expression name: [(type_identifier) (scoped_type_identifier)] @name) @reference.class

(use_declaration) @import

(let_declaration pattern: (identifier) @variable type: (_) @type)
(parameter pattern: (identifier) @variable type: (_) @type)
(field_declaration name: (field_identifier) @variable type: (_) @type)

; `let x = Foo { .. }`: a struct literal is its type for certain (`Foo::new()` may return anything)
(let_declaration pattern: (identifier) @variable value: (struct_expression name: [(type_identifier) (scoped_type_identifier)] @constructor))
