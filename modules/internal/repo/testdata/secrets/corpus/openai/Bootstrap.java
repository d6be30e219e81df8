public class Bootstrap {
    static {
        System.setProperty("openai.api.key", "sk-e@@h1lg28t85zlanucb1tnT3BlbkFJt48ngarx6v7x519ah812");
    }
}
