; The code graph's query for C (codeasst.index.tags reads it; the captures are described there).
; A prototype (a declaration without a body) is no definition: the definition is where the body is,
; as ctags counts them. Calls to functions defined elsewhere resolve through the `#include`s.

(function_definition declarator: (function_declarator declarator: (identifier) @name)) @definition.function
(function_definition declarator: (pointer_declarator declarator: (function_declarator declarator: (identifier) @name))) @definition.function
(function_definition declarator: (pointer_declarator declarator: (pointer_declarator declarator: (function_declarator declarator: (identifier) @name)))) @definition.function
(struct_specifier name: (type_identifier) @name body: (_)) @definition.struct
(union_specifier name: (type_identifier) @name body: (_)) @definition.union
(enum_specifier name: (type_identifier) @name body: (_)) @definition.enum
(type_definition type: (struct_specifier !name body: (_)) declarator: (type_identifier) @name) @definition.struct
(type_definition type: (union_specifier !name body: (_)) declarator: (type_identifier) @name) @definition.union
(type_definition type: (enum_specifier !name body: (_)) declarator: (type_identifier) @name) @definition.enum
(field_declaration declarator: (field_identifier) @name) @definition.field
(preproc_function_def name: (identifier) @name) @definition.macro
(preproc_def name: (identifier) @name value: (_)) @definition.constant
(field_declaration declarator: (pointer_declarator declarator: (field_identifier) @name)) @definition.field

(call_expression function: [(identifier) (field_expression)] @name) @reference.call

(preproc_include path: (_) @include)

(declaration type: (_) @type declarator: (identifier) @variable)
(declaration type: (_) @type declarator: (init_declarator declarator: (identifier) @variable))
(declaration type: (_) @type declarator: (pointer_declarator declarator: (identifier) @variable))
(declaration type: (_) @type declarator: (init_declarator declarator: (pointer_declarator declarator: (identifier) @variable)))
(parameter_declaration type: (_) @type declarator: (identifier) @variable)
(parameter_declaration type: (_) @type declarator: (pointer_declarator declarator: (identifier) @variable))
