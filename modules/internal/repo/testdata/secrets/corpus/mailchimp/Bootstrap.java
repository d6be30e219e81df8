public class Bootstrap {
    static {
        System.setProperty("mailchimp.api.key", "245c@@4de60368c05f2af9574073e64c21-us20");
    }
}
