import React, { useState } from "react";

export type Todo = { id: number; title: string; done: boolean };

const EMPTY_MESSAGE = "Nothing to do";

interface TodoListProps {
  initial: Todo[];
  onChange?: (todos: Todo[]) => void;
}

export function TodoItem({ todo, onToggle }: { todo: Todo; onToggle: (id: number) => void }) {
  return (
    <li className={todo.done ? "done" : ""} onClick={() => onToggle(todo.id)}>
      {todo.title}
    </li>
  );
}

export const TodoList = ({ initial, onChange }: TodoListProps) => {
  const [todos, setTodos] = useState(initial);
  const toggle = (id: number) => {
    const next = todos.map((t) => (t.id === id ? { ...t, done: !t.done } : t));
    setTodos(next);
    onChange?.(next);
  };
  if (todos.length === 0) {
    return <p>{EMPTY_MESSAGE}</p>;
  }
  return (
    <ul>
      {todos.map((t) => (
        <TodoItem key={t.id} todo={t} onToggle={toggle} />
      ))}
    </ul>
  );
};

export class TodoStore {
  private todos: Todo[] = [];

  add(title: string): Todo {
    const todo = { id: this.todos.length + 1, title, done: false };
    this.todos.push(todo);
    return todo;
  }

  pending(): Todo[] {
    return this.todos.filter((t) => !t.done);
  }

  clearDone(): number {
    const before = this.todos.length;
    this.todos = this.todos.filter((t) => !t.done);
    return before - this.todos.length;
  }
}

export default TodoList;
