; The code graph's query for C++ (codeasst.index.tags reads it; the captures are described there).
; Declarations without a body (a method declared in its class, a prototype) are not definitions:
; the definition is where the body is, as ctags counts them.

; `= default` and `= delete` define nothing; a name in capitals with no type before it is a macro
; after a declaration (`void f() LOCKS_EXCLUDED(mu_) {`) that the grammar misreads as a constructor.
(function_definition type: (_) declarator: (function_declarator declarator: (_) @name) body: (compound_statement)) @definition.function
(field_declaration_list (function_definition !type declarator: (function_declarator declarator: (_) @name)
  body: (compound_statement) (#not-match? @name "^[A-Z][A-Z0-9_]+$")) @definition.function)
(translation_unit (function_definition !type declarator: (function_declarator declarator: (_) @name)
  body: (compound_statement)) @definition.function)
(declaration_list (function_definition !type declarator: (function_declarator declarator: (_) @name)
  body: (compound_statement)) @definition.function)
(template_declaration (function_definition !type declarator: (function_declarator declarator: (_) @name)
  body: (compound_statement)) @definition.function)
(preproc_if (function_definition !type declarator: (function_declarator declarator: (_) @name)
  body: (compound_statement)) @definition.function)
(preproc_ifdef (function_definition !type declarator: (function_declarator declarator: (_) @name)
  body: (compound_statement)) @definition.function)
(preproc_else (function_definition !type declarator: (function_declarator declarator: (_) @name)
  body: (compound_statement)) @definition.function)
(preproc_elif (function_definition !type declarator: (function_declarator declarator: (_) @name)
  body: (compound_statement)) @definition.function)
(function_definition declarator: (pointer_declarator declarator: (pointer_declarator declarator: (function_declarator declarator: (_) @name))) body: (compound_statement)) @definition.function
(function_definition declarator: (pointer_declarator declarator: (function_declarator declarator: (_) @name)) body: (compound_statement)) @definition.function
(function_definition declarator: (reference_declarator (function_declarator declarator: (_) @name)) body: (compound_statement)) @definition.function
(class_specifier name: [(type_identifier) (qualified_identifier)] @name body: (_)) @definition.class
(struct_specifier name: [(type_identifier) (qualified_identifier)] @name body: (_)) @definition.struct
(union_specifier name: [(type_identifier) (qualified_identifier)] @name body: (_)) @definition.union
(enum_specifier name: [(type_identifier) (qualified_identifier)] @name body: (_)) @definition.enum
; `class LEVELDB_EXPORT Cache {`: an export macro before the name reads as a function returning a class
(function_definition type: (class_specifier) declarator: (identifier) @name body: (_)) @definition.class
(function_definition type: (struct_specifier) declarator: (identifier) @name body: (_)) @definition.struct
(type_definition type: (struct_specifier !name body: (_)) declarator: (type_identifier) @name) @definition.struct
(namespace_definition name: (_) @name) @definition.namespace
(field_declaration declarator: (field_identifier) @name) @definition.field
(preproc_function_def name: (identifier) @name) @definition.macro
(preproc_def name: (identifier) @name value: (_)) @definition.constant

(base_class_clause [(type_identifier) (qualified_identifier) (template_type)] @reference.inherit)

(call_expression function: [(identifier) (qualified_identifier) (field_expression) (template_function)] @name) @reference.call
(new_expression type: (_) @name) @reference.class

(preproc_include path: (_) @include)

(declaration type: (_) @type declarator: (identifier) @variable)
(declaration type: (_) @type declarator: (init_declarator declarator: (identifier) @variable))
(declaration type: (_) @type declarator: (pointer_declarator declarator: (identifier) @variable))
(declaration type: (_) @type declarator: (reference_declarator (identifier) @variable))
(parameter_declaration type: (_) @type declarator: (identifier) @variable)
(parameter_declaration type: (_) @type declarator: (pointer_declarator declarator: (identifier) @variable))
(parameter_declaration type: (_) @type declarator: (reference_declarator (identifier) @variable))
(field_declaration type: (_) @type declarator: (field_identifier) @variable)
(field_declaration type: (_) @type declarator: (pointer_declarator declarator: (field_identifier) @variable))

; `auto x = new Foo(..)`, `auto x = Foo(..)` of a capitalized name: a call on x is a member of Foo's, so
; where Foo is a function after all, nothing has that name and the call stays unresolved
(declaration type: (placeholder_type_specifier) declarator: (init_declarator declarator: (identifier) @variable
  value: (new_expression type: (_) @constructor)))
(declaration type: (placeholder_type_specifier) declarator: (init_declarator
  declarator: (pointer_declarator declarator: (identifier) @variable) value: (new_expression type: (_) @constructor)))
(declaration type: (placeholder_type_specifier) declarator: (init_declarator declarator: (identifier) @variable
  value: (call_expression function: (identifier) @constructor)) (#match? @constructor "^[A-Z]"))
