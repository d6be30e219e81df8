public class Bootstrap {
    static {
        System.setProperty("sendgrid.api.token", "SG.3@@06fuokppx3=l7-i9z7qwx48dzdbabdli46dl6iutphqtbm9xie5ux5kwu_98m47-d");
    }
}
