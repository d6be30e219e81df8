require_relative "../lib/greeter"

RSpec.describe Greeter do
  describe "#hello" do
    it "greets" do
      expect(Greeter.new.hello("a")).to eq("hello a")
    end

    it "greets nobody" do
      expect(Greeter.new.hello("")).to eq("hello ")
    end
  end
end
