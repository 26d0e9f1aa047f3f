; The code graph's query for Ruby (codeasst.index.tags reads it; the captures are described there).
; Receivers have no declared types: a call on anything but self is counted, not resolved.

(class name: [(constant) (scope_resolution)] @name) @definition.class
(module name: [(constant) (scope_resolution)] @name) @definition.module
(method name: (_) @name) @definition.method
(singleton_method name: (_) @name) @definition.method
(assignment left: (constant) @name) @definition.constant

(superclass (_) @reference.inherit)

(call receiver: (_) @receiver method: (identifier) @name) @reference.call
(call !receiver method: (identifier) @name) @reference.call
