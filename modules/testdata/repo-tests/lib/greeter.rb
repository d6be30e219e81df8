class Greeter
  def hello(name)
    "hello #{name}"
  end
end
