package bank.accounts

import scala.collection.mutable

object Limits {
  val MaxBalance: BigDecimal = 1000000
  val MinDeposit: BigDecimal = 1
}

case class Transaction(id: Long, amount: BigDecimal, memo: String)

trait Auditable {
  def audit(): Seq[String]
}

class Account(val owner: String) extends Auditable {
  private val history = mutable.ListBuffer.empty[Transaction]
  private var balance: BigDecimal = 0

  def deposit(amount: BigDecimal, memo: String = ""): Unit = {
    require(amount >= Limits.MinDeposit, "deposit too small")
    require(balance + amount <= Limits.MaxBalance, "balance limit")
    balance += amount
    history += Transaction(history.size + 1, amount, memo)
  }

  def withdraw(amount: BigDecimal): Boolean = {
    if (amount > balance) false
    else {
      balance -= amount
      history += Transaction(history.size + 1, -amount, "withdrawal")
      true
    }
  }

  override def audit(): Seq[String] =
    history.map(t => s"${t.id}: ${t.amount} ${t.memo}").toSeq
}

object Account {
  def open(owner: String, initial: BigDecimal): Account = {
    val account = new Account(owner)
    account.deposit(initial, "opening")
    account
  }
}

def summary(accounts: Seq[Account]): String =
  accounts.map(a => a.owner).mkString(", ")
