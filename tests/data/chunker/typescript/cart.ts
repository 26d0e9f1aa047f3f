import { EventEmitter } from "events";
import type { Product } from "./product";

export const TAX_RATE = 0.2;
const MAX_ITEMS = 50;

export interface CartLine {
  product: Product;
  quantity: number;
}

export enum CartState {
  Open,
  CheckedOut,
}

export class Cart extends EventEmitter {
  private lines: CartLine[] = [];
  state: CartState = CartState.Open;

  add(product: Product, quantity = 1): void {
    if (this.lines.length >= MAX_ITEMS) {
      throw new Error("cart is full");
    }
    this.lines.push({ product, quantity });
    this.emit("changed", this.lines.length);
  }

  get subtotal(): number {
    return this.lines.reduce((sum, l) => sum + l.product.price * l.quantity, 0);
  }

  checkout(): number {
    this.state = CartState.CheckedOut;
    return withTax(this.subtotal);
  }
}

export function withTax(amount: number): number {
  return Math.round(amount * (1 + TAX_RATE) * 100) / 100;
}

export const formatPrice = (amount: number, currency = "EUR"): string => {
  return new Intl.NumberFormat("en", { style: "currency", currency }).format(amount);
};

type Listener = (count: number) => void;

export default function createCart(listener?: Listener): Cart {
  const cart = new Cart();
  if (listener) {
    cart.on("changed", listener);
  }
  return cart;
}
